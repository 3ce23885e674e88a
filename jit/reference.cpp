// The matmul loop shared by the scalar twins: one dot product per (row, column) with the
// weight type's reference order, then the epilogue.
#include <cmath>

#include "jit/packed_weights.h"
#include "jit/reference.h"
#include "jit/silu_constants.h"
#include "jit/weight_kernels.h"
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

void reference_kernel(const KernelSpec& spec, const GemmArgs* a) {
  if (spec.op == Op::Dense) return reference_dense(spec, a);
  const int P = panel_cols(spec.isa);
  const WeightKernels* w = weight_kernels(spec.wtype);
  if (!w) throw Error("reference_kernel: no reference for " + spec.to_string());
  const int nb = int(spec.k / w->block_elems);
  const auto dot = w->twin_dot;
  const int64_t block_bytes = w->panel_block_bytes(P);
  const int64_t ps = int64_t(nb) * block_bytes;
  for (int64_t m = 0; m < a->m; ++m) {
    const uint8_t* xrow = static_cast<const uint8_t*>(a->x) + m * a->ldx;
    float* yrow = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a->y) + m * a->ldy);
    for (int64_t c = 0; c < a->n; ++c) {
      const int64_t off = (c / P) * ps;
      const int l = int(c % P);
      float v = dot(a->w + off, P, l, xrow, nb);
      if (spec.op == Op::SwiGLU) v = silu_mul_ref(v, dot(a->w2 + off, P, l, xrow, nb));
      else if (spec.epilogue == Epilogue::ResidualAdd)
        v += reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(a->r) + m * a->ldr)[c];
      yrow[c] = v;
    }
  }
}

}  // namespace ckjit::jit
