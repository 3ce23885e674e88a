// Scalar reference of the Q8_0 x Q8_0 kernels (order: q80_avx512_emitter.cpp header).
#include <cmath>
#include <cstring>

#include "jit/packed_weights.h"
#include "jit/reference.h"

namespace ckjit::jit {

float ref_dot_q80(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb) {
  const Q80PanelLayout L{P};
  float acc = 0;
  for (int b = 0; b < nb; ++b) {
    const uint8_t* blk = panel + int64_t(b) * L.bytes();
    const auto* a = reinterpret_cast<const quant::BlockQ8_0*>(xrow) + b;
    int32_t I = 0;
    for (int e = 0; e < 32; ++e) I += int32_t(int8_t(blk[L.qs(e / 4) + 4 * l + e % 4])) * a->qs[e];
    uint16_t d;
    std::memcpy(&d, blk + L.d() + 2 * l, 2);
    acc = std::fma(float(I), quant::f16_to_f32(d) * quant::f16_to_f32(a->d), acc);
  }
  return acc;
}

}  // namespace ckjit::jit
