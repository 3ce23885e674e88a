#pragma once
// Rope::apply's rotation, written once for its copies (rope_avx2.cpp, rope.cpp): inlined into each,
// so the AVX2 + FMA copy runs std::fma as one instruction and the portable one as libm's fma (one
// rounding either way; -ffp-contract=off keeps every other product rounded).
#include <cmath>
#include <cstdint>

namespace ckjit::graph {

[[gnu::always_inline]] inline void rotate_heads(float* x, int64_t n_heads, int64_t head_dim, const float* cos_v,
                                                const float* sin_v) {
  const int64_t half = head_dim / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int64_t k = 0; k < half; ++k) {
      const float x0 = v[k], x1 = v[k + half];
      // As GCC contracts llama.cpp's rotate_pairs (x0*c - x1*s, x0*s + x1*c): the second product is
      // rounded, the first fused (matched against peer-cli: the other choice flips f16 K values).
      v[k] = std::fma(x0, cos_v[k], -(x1 * sin_v[k]));
      v[k + half] = std::fma(x0, sin_v[k], x1 * cos_v[k]);
    }
  }
}

// The copies: AVX2 + FMA (rope_avx2.cpp) and portable (rope.cpp); Rope takes one at construction.
void rotate_heads_avx2(float* x, int64_t n_heads, int64_t head_dim, const float* cos_v, const float* sin_v);
void rotate_heads_portable(float* x, int64_t n_heads, int64_t head_dim, const float* cos_v, const float* sin_v);

}  // namespace ckjit::graph
