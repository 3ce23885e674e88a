// Load-time repacking of Q5_K rows into panels (layout in packed_weights.h): the 5-bit quants are
// recombined into one byte each.
#include <cstring>

#include "jit/packed_weights.h"
#include "runtime/error.h"
#include "runtime/quants/quant_internal.h"

namespace ckjit::jit {
namespace detail {
PackedWeights allocate(TensorType type, int64_t n, int64_t k, int panel, int64_t block_bytes);
}

PackedWeights repack_q5_K(const quant::BlockQ5_K* src, int64_t n, int64_t k, int panel, int threads) {
  const Q5KPanelLayout L{panel};
  PackedWeights w = detail::allocate(TensorType::Q5_K, n, k, panel, L.bytes());
  const int64_t nb = k / quant::QK_K;
  parallel_ranges(w.n_panels, threads, [&](int64_t p0, int64_t p1) {
    uint8_t u[256];
    for (int64_t p = p0; p < p1; ++p) {
      uint8_t* pp = w.data.get() + p * w.panel_stride;
      std::memset(pp, 0, size_t(w.panel_stride));
      for (int l = 0; l < panel && p * panel + l < n; ++l) {
        const int64_t row = p * panel + l;
        for (int64_t b = 0; b < nb; ++b) {
          const quant::BlockQ5_K& x = src[row * nb + b];
          uint8_t* dst = pp + b * L.bytes();
          for (int e = 0; e < 256; ++e) {
            const int c = e / 64, r = e % 64, s = e / 32;
            const int lo = r < 32 ? (x.qs[32 * c + r] & 15) : (x.qs[32 * c + r - 32] >> 4);
            u[e] = uint8_t(lo | (((x.qh[e % 32] >> s) & 1) << 4));
          }
          for (int j = 0; j < 64; ++j) std::memcpy(dst + L.u(j) + 4 * l, u + 4 * j, 4);
          uint8_t sc[8], mn[8];
          quant::unpack_k4_scales(x.scales, sc, mn);
          for (int s = 0; s < 8; ++s) {
            dst[L.sc(s) + l] = sc[s];
            dst[L.mn(s) + l] = mn[s];
          }
          std::memcpy(dst + L.d() + 2 * l, &x.d, 2);
          std::memcpy(dst + L.dmin() + 2 * l, &x.dmin, 2);
        }
      }
    }
  });
  return w;
}

void unpack_q5_K(const PackedWeights& w, quant::BlockQ5_K* dst) {
  if (w.type != TensorType::Q5_K) throw Error("unpack_q5_K: weights are not Q5_K");
  const Q5KPanelLayout L{w.panel};
  const int64_t nb = w.k / quant::QK_K;
  uint8_t u[256];
  for (int64_t row = 0; row < w.n; ++row) {
    const uint8_t* pp = w.panel_ptr(row / w.panel);
    const int l = int(row % w.panel);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* s = pp + b * L.bytes();
      quant::BlockQ5_K& x = dst[row * nb + b];
      for (int j = 0; j < 64; ++j) std::memcpy(u + 4 * j, s + L.u(j) + 4 * l, 4);
      std::memset(x.qs, 0, sizeof x.qs);
      std::memset(x.qh, 0, sizeof x.qh);
      for (int e = 0; e < 256; ++e) {
        const int c = e / 64, r = e % 64;
        if (r < 32) x.qs[32 * c + r] |= uint8_t(u[e] & 15);
        else x.qs[32 * c + r - 32] |= uint8_t((u[e] & 15) << 4);
        x.qh[e % 32] |= uint8_t((u[e] >> 4) << (e / 32));
      }
      uint8_t sc[8], mn[8];
      for (int i = 0; i < 8; ++i) {
        sc[i] = s[L.sc(i) + l];
        mn[i] = s[L.mn(i) + l];
      }
      quant::detail::pack_k4_scales(sc, mn, x.scales);
      std::memcpy(&x.d, s + L.d() + 2 * l, 2);
      std::memcpy(&x.dmin, s + L.dmin() + 2 * l, 2);
    }
  }
}

}  // namespace ckjit::jit
