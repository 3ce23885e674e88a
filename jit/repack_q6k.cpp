// Load-time repacking of Q6_K rows into panels (layout in packed_weights.h): the 6-bit quants are
// recombined into one byte each so the kernels feed them straight to vpdpbusd.
#include <cstring>

#include "jit/packed_weights.h"
#include "runtime/error.h"

namespace ckjit::jit {
namespace detail {
PackedWeights allocate(TensorType type, int64_t n, int64_t k, int panel, int64_t block_bytes);
}

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

}  // namespace

PackedWeights repack_q6_K(const quant::BlockQ6_K* src, int64_t n, int64_t k, int panel, int threads) {
  const Q6KPanelLayout L{panel};
  PackedWeights w = detail::allocate(TensorType::Q6_K, n, k, panel, L.bytes());
  const int64_t nb = k / quant::QK_K;
  parallel_ranges(w.n_panels, threads, [&](int64_t p0, int64_t p1) {
    uint8_t u[256];
    for (int64_t p = p0; p < p1; ++p) {
      uint8_t* pp = w.data.get() + p * w.panel_stride;
      std::memset(pp, 0, size_t(w.panel_stride));
      for (int l = 0; l < panel && p * panel + l < n; ++l) {
        const int64_t row = p * panel + l;
        for (int64_t b = 0; b < nb; ++b) {
          const quant::BlockQ6_K& x = src[row * nb + b];
          uint8_t* dst = pp + b * L.bytes();
          q6k_quants(x, u);
          for (int j = 0; j < 64; ++j) std::memcpy(dst + L.u(j) + 4 * l, u + 4 * j, 4);
          for (int i = 0; i < 8; ++i) {
            dst[L.scp(i) + 2 * l] = uint8_t(x.scales[2 * i]);
            dst[L.scp(i) + 2 * l + 1] = uint8_t(x.scales[2 * i + 1]);
          }
          std::memcpy(dst + L.d() + 2 * l, &x.d, 2);
        }
      }
    }
  });
  return w;
}

void unpack_q6_K(const PackedWeights& w, quant::BlockQ6_K* dst) {
  if (w.type != TensorType::Q6_K) throw Error("unpack_q6_K: weights are not Q6_K");
  const Q6KPanelLayout L{w.panel};
  const int64_t nb = w.k / quant::QK_K;
  uint8_t u[256];
  for (int64_t row = 0; row < w.n; ++row) {
    const uint8_t* pp = w.panel_ptr(row / w.panel);
    const int l = int(row % w.panel);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* s = pp + b * L.bytes();
      quant::BlockQ6_K& x = dst[row * nb + b];
      for (int j = 0; j < 64; ++j) std::memcpy(u + 4 * j, s + L.u(j) + 4 * l, 4);
      q6k_pack(u, x);
      for (int i = 0; i < 8; ++i) {
        x.scales[2 * i] = int8_t(s[L.scp(i) + 2 * l]);
        x.scales[2 * i + 1] = int8_t(s[L.scp(i) + 2 * l + 1]);
      }
      std::memcpy(&x.d, s + L.d() + 2 * l, 2);
    }
  }
}

}  // namespace ckjit::jit
