// Load-time repacking of Q4_K rows into 16- or 8-row panels (layout in packed_weights.h).
#include <cstddef>

#include "jit/repack_full.h"
#include "jit/repack_panels.h"

namespace ckjit::jit {

namespace {

// One row's block: the qs quads transposed into the row's 4-byte slots, then the scales.
void pack_row(const Q4KPanelLayout& L, const quant::BlockQ4_K& x, uint8_t* dst, int l) {
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 8; ++j) std::memcpy(dst + L.qs(c, j) + l * 4, x.qs + 32 * c + 4 * j, 4);
  detail::put_k4_scales(L, x, dst, l);
}

}  // namespace

PackedWeights repack_q4_K(const quant::BlockQ4_K* src, int64_t n, int64_t k, int panel, int threads, bool simd) {
  const Q4KPanelLayout L{panel};
  const detail::FullPackers* full = simd ? detail::full_packers() : nullptr;
  return detail::repack_panels(
      TensorType::Q4_K, src, n, k, panel, threads, L.bytes(), full != nullptr,
      [&](const quant::BlockQ4_K& x, uint8_t* dst, int l) { pack_row(L, x, dst, l); },
      [&](const quant::BlockQ4_K* x, int64_t stride, uint8_t* dst) { full->q4_K(L, x, stride, dst); });
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
