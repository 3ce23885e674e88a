// Scalar reference of the Q6_K x Q8_K kernels (order: q6k_avx512_emitter.cpp header).
#include <cmath>
#include <cstring>

#include "jit/packed_weights.h"
#include "jit/reference.h"

namespace ckjit::jit {

float ref_dot_q6k(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb) {
  const Q6KPanelLayout L{P};
  float acc = 0;
  for (int b = 0; b < nb; ++b) {
    const uint8_t* blk = panel + int64_t(b) * L.bytes();
    const auto* a = reinterpret_cast<const quant::BlockQ8_K*>(xrow) + b;
    int32_t S = 0, C = 0;
    for (int t = 0; t < 16; ++t) {
      const int32_t sc = int8_t(blk[L.scp(t / 2) + 2 * l + t % 2]);
      int32_t dot = 0;
      for (int e = 16 * t; e < 16 * t + 16; ++e) dot += int32_t(blk[L.u(e / 4) + 4 * l + e % 4]) * a->qs[e];
      S += sc * dot;
      C += sc * a->bsums[t];
    }
    S -= 32 * C;
    uint16_t d;
    std::memcpy(&d, blk + L.d() + 2 * l, 2);
    acc = std::fma(float(S), quant::f16_to_f32(d) * a->d, acc);
  }
  return acc;
}

}  // namespace ckjit::jit
