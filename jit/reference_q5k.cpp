// Scalar reference of the Q5_K x Q8_K kernels: the Q4_K order (jit/x86/q4k_avx512_emitter.cpp header)
// with 5-bit quants.
#include <cmath>
#include <cstring>

#include "jit/packed_weights.h"
#include "jit/reference.h"

namespace ckjit::jit {

float ref_dot_q5k(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb) {
  const Q5KPanelLayout L{P};
  float acc = 0, accm = 0;
  for (int b = 0; b < nb; ++b) {
    const uint8_t* blk = panel + int64_t(b) * L.bytes();
    const auto* a = reinterpret_cast<const quant::BlockQ8_K*>(xrow) + b;
    int32_t S = 0, M = 0;
    for (int s = 0; s < 8; ++s) {
      int32_t dot = 0;
      for (int e = 32 * s; e < 32 * s + 32; ++e) dot += int32_t(blk[L.u(e / 4) + 4 * l + e % 4]) * a->qs[e];
      S += int32_t(blk[L.sc(s) + l]) * dot;
      M += int32_t(blk[L.mn(s) + l]) * (a->bsums[2 * s] + a->bsums[2 * s + 1]);
    }
    uint16_t d, dmin;
    std::memcpy(&d, blk + L.d() + 2 * l, 2);
    std::memcpy(&dmin, blk + L.dmin() + 2 * l, 2);
    acc = std::fma(float(S), quant::f16_to_f32(d) * a->d, acc);
    accm = std::fma(float(M), quant::f16_to_f32(dmin) * a->d, accm);
  }
  return acc - accm;
}

}  // namespace ckjit::jit
