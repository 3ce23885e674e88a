// Load-time repacking of Q8_0 rows into panels (layout in packed_weights.h).
#include <cstring>

#include "jit/packed_weights.h"
#include "runtime/error.h"

namespace ckjit::jit {
namespace detail {
PackedWeights allocate(TensorType type, int64_t n, int64_t k, int panel, int64_t block_bytes);
}

PackedWeights repack_q8_0(const quant::BlockQ8_0* src, int64_t n, int64_t k, int panel, int threads) {
  const Q80PanelLayout L{panel};
  PackedWeights w = detail::allocate(TensorType::Q8_0, n, k, panel, L.bytes());
  const int64_t nb = k / quant::QK8_0;
  parallel_ranges(w.n_panels, threads, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint8_t* pp = w.data.get() + p * w.panel_stride;
      std::memset(pp, 0, size_t(w.panel_stride));
      for (int l = 0; l < panel && p * panel + l < n; ++l) {
        const int64_t row = p * panel + l;
        for (int64_t b = 0; b < nb; ++b) {
          const quant::BlockQ8_0& x = src[row * nb + b];
          uint8_t* dst = pp + b * L.bytes();
          int32_t sum = 0;
          for (int j = 0; j < 8; ++j) std::memcpy(dst + L.qs(j) + 4 * l, x.qs + 4 * j, 4);
          for (int e = 0; e < 32; ++e) sum += x.qs[e];
          std::memcpy(dst + L.d() + 2 * l, &x.d, 2);
          std::memcpy(dst + L.wsum() + 4 * l, &sum, 4);
        }
      }
    }
  });
  return w;
}

void unpack_q8_0(const PackedWeights& w, quant::BlockQ8_0* dst) {
  if (w.type != TensorType::Q8_0) throw Error("unpack_q8_0: weights are not Q8_0");
  const Q80PanelLayout L{w.panel};
  const int64_t nb = w.k / quant::QK8_0;
  for (int64_t row = 0; row < w.n; ++row) {
    const uint8_t* pp = w.panel_ptr(row / w.panel);
    const int l = int(row % w.panel);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* s = pp + b * L.bytes();
      quant::BlockQ8_0& x = dst[row * nb + b];
      for (int j = 0; j < 8; ++j) std::memcpy(x.qs + 4 * j, s + L.qs(j) + 4 * l, 4);
      std::memcpy(&x.d, s + L.d() + 2 * l, 2);
    }
  }
}

}  // namespace ckjit::jit
