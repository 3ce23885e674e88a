// Load-time repacking of Q4_K rows into 16- or 8-row panels (layout in packed_weights.h).
#include "jit/repack_panels.h"

namespace ckjit::jit {

namespace {

// One row's block: the qs quads transposed into the row's 4-byte slots, then the scales.
void pack_row(const Q4KPanelLayout& L, const quant::BlockQ4_K& x, uint8_t* dst, int l) {
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 8; ++j) std::memcpy(dst + L.qs(c, j) + l * 4, x.qs + 32 * c + 4 * j, 4);
  detail::put_k4_scales(L, x, dst, l);
}

// A full panel's block: qs pair c of 8 rows is an 8 x 8 transpose of quads (row i's 32 bytes in,
// quad j of every row out), so each output store is 32 bytes. The layout has no padding.
CKJIT_AVX2 void pack_full(const Q4KPanelLayout& L, const quant::BlockQ4_K* x, int64_t stride, uint8_t* dst) {
  for (int h = 0; h < L.P / 8; ++h)
    for (int c = 0; c < 4; ++c) {
      const uint8_t* rows[8];
      for (int i = 0; i < 8; ++i) rows[i] = x[(8 * h + i) * stride].qs + 32 * c;
      detail::transpose8x8_32(rows, dst + L.qs(c, 0) + 32 * h, L.P * 4);
    }
  for (int l = 0; l < L.P; ++l) detail::put_k4_scales(L, x[l * stride], dst, l);
}

}  // namespace

PackedWeights repack_q4_K(const quant::BlockQ4_K* src, int64_t n, int64_t k, int panel, int threads, bool simd) {
  const Q4KPanelLayout L{panel};
  return detail::repack_panels(
      TensorType::Q4_K, src, n, k, panel, threads, L.bytes(), simd,
      [&](const quant::BlockQ4_K& x, uint8_t* dst, int l) { pack_row(L, x, dst, l); },
      [&](const quant::BlockQ4_K* x, int64_t stride, uint8_t* dst) { pack_full(L, x, stride, dst); });
}

void unpack_q4_K(const PackedWeights& w, quant::BlockQ4_K* dst) {
  if (w.type != TensorType::Q4_K) throw Error("unpack_q4_K: weights are not Q4_K");
  const Q4KPanelLayout L{w.panel};
  detail::unpack_panels(w, dst, [&](const uint8_t* s, int l, quant::BlockQ4_K& x) {
    for (int c = 0; c < 4; ++c)
      for (int j = 0; j < 8; ++j) std::memcpy(x.qs + 32 * c + 4 * j, s + L.qs(c, j) + l * 4, 4);
    detail::get_k4_scales(L, s, l, x);
  });
}

}  // namespace ckjit::jit
