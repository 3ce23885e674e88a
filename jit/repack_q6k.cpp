// Load-time repacking of Q6_K rows into panels (layout in packed_weights.h): the 6-bit quants are
// recombined into one byte each so the kernels feed them straight to vpdpbusd.
#include "jit/repack_full.h"
#include "jit/repack_panels.h"

namespace ckjit::jit {

namespace {

// u[e] (0..63) of element e of a Q6_K block (quants.md §6).
void q6k_quants(const quant::BlockQ6_K& b, uint8_t u[256]) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t lo0 = b.ql[64 * h + l], lo1 = b.ql[64 * h + 32 + l], hi = b.qh[32 * h + l];
      u[128 * h + l] = uint8_t((lo0 & 15) | ((hi & 3) << 4));
      u[128 * h + 32 + l] = uint8_t((lo1 & 15) | (((hi >> 2) & 3) << 4));
      u[128 * h + 64 + l] = uint8_t((lo0 >> 4) | (((hi >> 4) & 3) << 4));
      u[128 * h + 96 + l] = uint8_t((lo1 >> 4) | (((hi >> 6) & 3) << 4));
    }
}

void q6k_pack(const uint8_t u[256], quant::BlockQ6_K& b) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l) {
      const uint8_t* v = u + 128 * h;
      b.ql[64 * h + l] = uint8_t((v[l] & 15) | ((v[64 + l] & 15) << 4));
      b.ql[64 * h + 32 + l] = uint8_t((v[32 + l] & 15) | ((v[96 + l] & 15) << 4));
      b.qh[32 * h + l] = uint8_t((v[l] >> 4) | ((v[32 + l] >> 4) << 2) | ((v[64 + l] >> 4) << 4) | ((v[96 + l] >> 4) << 6));
    }
}

// The scale pairs and d of one row's block.
void put_scales(const Q6KPanelLayout& L, const quant::BlockQ6_K& x, uint8_t* dst, int l) {
  for (int i = 0; i < 8; ++i) {
    dst[L.scp(i) + 2 * l] = uint8_t(x.scales[2 * i]);
    dst[L.scp(i) + 2 * l + 1] = uint8_t(x.scales[2 * i + 1]);
  }
  std::memcpy(dst + L.d() + 2 * l, &x.d, 2);
}

// One row's block: its quants recombined, then scattered into the row's slots.
void pack_row(const Q6KPanelLayout& L, const quant::BlockQ6_K& x, uint8_t* dst, int l) {
  uint8_t u[256];
  q6k_quants(x, u);
  for (int j = 0; j < 64; ++j) std::memcpy(dst + L.u(j) + 4 * l, u + 4 * j, 4);
  put_scales(L, x, dst, l);
}

}  // namespace

PackedWeights repack_q6_K(const quant::BlockQ6_K* src, int64_t n, int64_t k, int panel, int threads, bool simd) {
  const Q6KPanelLayout L{panel};
  const detail::FullPackers* full = simd ? detail::full_packers() : nullptr;
  return detail::repack_panels(
      TensorType::Q6_K, src, n, k, panel, threads, L.bytes(), full != nullptr,
      [&](const quant::BlockQ6_K& x, uint8_t* dst, int l) { pack_row(L, x, dst, l); },
      [&](const quant::BlockQ6_K* x, int64_t stride, uint8_t* dst) { full->q6_K(L, x, stride, dst); });
}

void unpack_q6_K(const PackedWeights& w, quant::BlockQ6_K* dst) {
  if (w.type != TensorType::Q6_K) throw Error("unpack_q6_K: weights are not Q6_K");
  const Q6KPanelLayout L{w.panel};
  detail::unpack_panels(w, dst, [&](const uint8_t* s, int l, quant::BlockQ6_K& x) {
    uint8_t u[256];
    for (int j = 0; j < 64; ++j) std::memcpy(u + 4 * j, s + L.u(j) + 4 * l, 4);
    q6k_pack(u, x);
    for (int i = 0; i < 8; ++i) {
      x.scales[2 * i] = int8_t(s[L.scp(i) + 2 * l]);
      x.scales[2 * i + 1] = int8_t(s[L.scp(i) + 2 * l + 1]);
    }
    std::memcpy(&x.d, s + L.d() + 2 * l, 2);
  });
}

}  // namespace ckjit::jit
