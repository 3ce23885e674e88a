// Scalar reference of the Q4_K x Q8_K kernels (order: q4k_avx512_emitter.cpp header).
#include <cmath>
#include <cstring>

#include "jit/packed_weights.h"
#include "jit/reference.h"
#include "jit/silu_constants.h"
#include "runtime/error.h"

namespace ckjit::jit {

float silu_mul_ref(float g, float u) {
  float x = std::fmin(std::fmax(-g, kExpLo), kExpHi);
  float n = std::nearbyint(x * kLog2e);
  float r = std::fma(n, -kLn2Hi, x);
  r = std::fma(n, -kLn2Lo, r);
  float p = kExpPoly[0];
  for (int i = 1; i < 8; ++i) p = std::fma(p, r, kExpPoly[i]);
  float e = std::ldexp(p, int(n));
  return (g / (1.0f + e)) * u;
}

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

namespace {

float q4k_dot(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb) {
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

}  // namespace

void reference_kernel(const KernelSpec& spec, const GemmArgs* a) {
  if (spec.wtype != TensorType::Q4_K) throw Error("reference_kernel: no reference for " + spec.to_string());
  const int P = panel_cols(spec.isa);
  const int nb = int(spec.k / quant::QK_K);
  const int64_t ps = int64_t(nb) * Q4KPanelLayout{P}.bytes();
  for (int64_t m = 0; m < a->m; ++m) {
    const uint8_t* xrow = static_cast<const uint8_t*>(a->x) + m * a->ldx;
    float* yrow = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a->y) + m * a->ldy);
    for (int64_t c = 0; c < a->n; ++c) {
      const int64_t off = (c / P) * ps;
      const int l = int(c % P);
      float v = q4k_dot(a->w + off, P, l, xrow, nb);
      if (spec.op == Op::SwiGLU) v = silu_mul_ref(v, q4k_dot(a->w2 + off, P, l, xrow, nb));
      else if (spec.epilogue == Epilogue::ResidualAdd)
        v += reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(a->r) + m * a->ldr)[c];
      yrow[c] = v;
    }
  }
}

}  // namespace ckjit::jit
