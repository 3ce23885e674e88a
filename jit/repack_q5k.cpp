// Load-time repacking of Q5_K rows into panels (layout in packed_weights.h): the 5-bit quants are
// recombined into one byte each.
#include "jit/repack_panels.h"

namespace ckjit::jit {

// No SIMD packer: Q5_K weights are rare (the scalar walk serves them).
PackedWeights repack_q5_K(const quant::BlockQ5_K* src, int64_t n, int64_t k, int panel, int threads) {
  const Q5KPanelLayout L{panel};
  return detail::repack_panels(TensorType::Q5_K, src, n, k, panel, threads, L.bytes(), false,
                               [&](const quant::BlockQ5_K& x, uint8_t* dst, int l) {
    uint8_t u[256];
    for (int e = 0; e < 256; ++e) {
      const int c = e / 64, r = e % 64, s = e / 32;
      const int lo = r < 32 ? (x.qs[32 * c + r] & 15) : (x.qs[32 * c + r - 32] >> 4);
      u[e] = uint8_t(lo | (((x.qh[e % 32] >> s) & 1) << 4));
    }
    for (int j = 0; j < 64; ++j) std::memcpy(dst + L.u(j) + 4 * l, u + 4 * j, 4);
    detail::put_k4_scales(L, x, dst, l);
  }, nullptr);
}

void unpack_q5_K(const PackedWeights& w, quant::BlockQ5_K* dst) {
  if (w.type != TensorType::Q5_K) throw Error("unpack_q5_K: weights are not Q5_K");
  const Q5KPanelLayout L{w.panel};
  detail::unpack_panels(w, dst, [&](const uint8_t* s, int l, quant::BlockQ5_K& x) {
    uint8_t u[256];
    for (int j = 0; j < 64; ++j) std::memcpy(u + 4 * j, s + L.u(j) + 4 * l, 4);
    std::memset(x.qs, 0, sizeof x.qs);
    std::memset(x.qh, 0, sizeof x.qh);
    for (int e = 0; e < 256; ++e) {
      const int c = e / 64, r = e % 64;
      if (r < 32) x.qs[32 * c + r] |= uint8_t(u[e] & 15);
      else x.qs[32 * c + r - 32] |= uint8_t((u[e] & 15) << 4);
      x.qh[e % 32] |= uint8_t((u[e] >> 4) << (e / 32));
    }
    detail::get_k4_scales(L, s, l, x);
  });
}

}  // namespace ckjit::jit
