// Scalar reference of the Q4_K x Q8_K kernels (order: q4k_avx512_emitter.cpp header).
#include <cmath>
#include <cstring>

#include "jit/packed_weights.h"
#include "jit/reference.h"
#include "runtime/error.h"

namespace ckjit::jit {

Q4KPartials q4k_partials(const uint8_t* blk, int l, int panel, const void* q8k) {
  const Q4KPanelLayout L{panel};
  const auto* a = static_cast<const quant::BlockQ8_K*>(q8k);
  int32_t S = 0, M = 0;
  for (int s = 0; s < 8; ++s) {
    int32_t dot = 0;
    for (int j = 0; j < 8; ++j)
      for (int t = 0; t < 4; ++t) {
        uint8_t byte = blk[L.qs(s / 2, j) + 4 * l + t];
        int q = s % 2 == 0 ? (byte & 15) : (byte >> 4);
        dot += q * a->qs[32 * s + 4 * j + t];
      }
    S += int32_t(blk[L.sc(s) + l]) * dot;
    M += int32_t(blk[L.mn(s) + l]) * (a->bsums[2 * s] + a->bsums[2 * s + 1]);
  }
  return {S, M};
}

float ref_dot_q4k(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb) {
  const Q4KPanelLayout L{P};
  float acc = 0, accm = 0;
  for (int b = 0; b < nb; ++b) {
    const uint8_t* blk = panel + int64_t(b) * L.bytes();
    const auto* a = reinterpret_cast<const quant::BlockQ8_K*>(xrow) + b;
    Q4KPartials p = q4k_partials(blk, l, P, a);
    uint16_t d, dmin;
    std::memcpy(&d, blk + L.d() + 2 * l, 2);
    std::memcpy(&dmin, blk + L.dmin() + 2 * l, 2);
    acc = std::fma(float(p.S), quant::f16_to_f32(d) * a->d, acc);
    accm = std::fma(float(p.M), quant::f16_to_f32(dmin) * a->d, accm);
  }
  return acc - accm;
}

}  // namespace ckjit::jit
