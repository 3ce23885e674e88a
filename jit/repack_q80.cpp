// Load-time repacking of Q8_0 rows into panels (layout in packed_weights.h).
#include "jit/repack_full.h"
#include "jit/repack_panels.h"

namespace ckjit::jit {

namespace {

void put_scale_and_sum(const Q80PanelLayout& L, const quant::BlockQ8_0& x, int32_t sum, uint8_t* dst, int l) {
  std::memcpy(dst + L.d() + 2 * l, &x.d, 2);
  std::memcpy(dst + L.wsum() + 4 * l, &sum, 4);
}

void pack_row(const Q80PanelLayout& L, const quant::BlockQ8_0& x, uint8_t* dst, int l) {
  int32_t sum = 0;
  for (int j = 0; j < 8; ++j) std::memcpy(dst + L.qs(j) + 4 * l, x.qs + 4 * j, 4);
  for (int e = 0; e < 32; ++e) sum += x.qs[e];
  put_scale_and_sum(L, x, sum, dst, l);
}

}  // namespace

PackedWeights repack_q8_0(const quant::BlockQ8_0* src, int64_t n, int64_t k, int panel, int threads, bool simd) {
  const Q80PanelLayout L{panel};
  const detail::FullPackers* full = simd ? detail::full_packers() : nullptr;
  return detail::repack_panels(
      TensorType::Q8_0, src, n, k, panel, threads, L.bytes(), full != nullptr,
      [&](const quant::BlockQ8_0& x, uint8_t* dst, int l) { pack_row(L, x, dst, l); },
      [&](const quant::BlockQ8_0* x, int64_t stride, uint8_t* dst) { full->q8_0(L, x, stride, dst); });
}

void unpack_q8_0(const PackedWeights& w, quant::BlockQ8_0* dst) {
  if (w.type != TensorType::Q8_0) throw Error("unpack_q8_0: weights are not Q8_0");
  const Q80PanelLayout L{w.panel};
  detail::unpack_panels(w, dst, [&](const uint8_t* s, int l, quant::BlockQ8_0& x) {
    for (int j = 0; j < 8; ++j) std::memcpy(x.qs + 4 * j, s + L.qs(j) + 4 * l, 4);
    std::memcpy(&x.d, s + L.d() + 2 * l, 2);
  });
}

}  // namespace ckjit::jit
