// The portable C++ twins of layer_ops' x86 kernels (layer_ops_kernels.h): the AVX-512 copies'
// operations lane by lane, in their order, so the same bits on any CPU. Chosen where the load's
// Isa runs no x86 copy (jit/hand_kernels.cpp); the tests hold the x86 copies to them.
#include <cmath>
#include <cstdint>

#include "graph/attention_row.h"
#include "graph/layer_ops_kernels.h"
#include "runtime/quants/f16_rows.h"
#include "runtime/quants/quants.h"

namespace ckjit::graph::kernels {
namespace {

struct Portable {
  static float h2f(uint16_t h) { return quant::f16_to_f32(h); }
  static uint16_t f2h(float f) { return quant::f32_to_f16_f16c(f); }
  static void to_f16(const float* x, uint16_t* y, int64_t n) { quant::f32_to_f16_rows(x, y, n); }

  // 4 accumulators of 16 lanes over 64-element steps, (a0 + a2) + (a1 + a3) per lane, then GCC's
  // zmm reduce-add tree (avx512fintrin.h): t3 = hi + lo (8 lanes), t6 = upper + lower 4 lanes of t3, result
  // (t6[0] + t6[2]) + (t6[1] + t6[3]); the tail in double.
  static float dot(const uint16_t* x, const float* y, int64_t n) {
    const int64_t np = n & ~int64_t(63);
    float a[4][16] = {};
    for (int64_t i = 0; i < np; i += 64)
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 16; ++l) {
          const int64_t e = i + 16 * j + l;
          a[j][l] = std::fma(h2f(x[e]), y[e], a[j][l]);
        }
    float s[16], t3[8], t6[4];
    for (int l = 0; l < 16; ++l) s[l] = (a[0][l] + a[2][l]) + (a[1][l] + a[3][l]);
    for (int l = 0; l < 8; ++l) t3[l] = s[8 + l] + s[l];
    for (int l = 0; l < 4; ++l) t6[l] = t3[4 + l] + t3[l];
    const float t8_0 = t6[0] + t6[2], t8_1 = t6[1] + t6[3];
    return float(row::dot_tail<Portable>(x, y, np, n, double(t8_0 + t8_1)));
  }
  // Element-wise: the vector steps and the tails do the same per element.
  static void scale(uint16_t* y, int64_t n, float v) { row::scale_tail<Portable>(y, 0, n, v); }
  static void mad(uint16_t* y, const uint16_t* x, int64_t n, float v) { row::mad_tail<Portable>(y, x, 0, n, v); }
};

// ggml_v_expf on one lane, as exp_llama_avx512: scalef(p, n) is the exact p * 2^n (in double)
// rounded once to float; lanes with |n| > 192 are 0 or infinity.
float exp_llama(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float p = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                           u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  if (std::isnan(n)) return p;  // scalef of a NaN: the NaN
  if (std::fabs(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  return float(std::ldexp(double(p), int(n)));
}

}  // namespace

void attention_row_portable(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* k, const uint16_t* v,
                            int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores) {
  row::attention_row<Portable>(s, q, n_keys, k, v, kv_width, out, qh, acc, scores);
}

void swiglu_portable(const float* g, const float* u, float* y, int64_t n) {
  const int64_t nv = n / 16 * 16;  // whole 16-element chunks as the AVX-512 copy
  for (int64_t i = 0; i < nv; ++i) y[i] = g[i] / (1.0f + exp_llama(0.0f - g[i])) * u[i];
  swiglu_tail(g, u, y, nv, n);
}

void swiglu_tail(const float* g, const float* u, float* y, int64_t i, int64_t n) {
  for (; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

}  // namespace ckjit::graph::kernels
