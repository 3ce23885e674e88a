// The AVX2 + FMA + F16C copies of layer_ops' kernels (layer_ops_kernels.h): llama.cpp's AVX-512
// orders lane for lane on ymm, so they give the AVX-512 copies' bits. Chosen where the load's Isa
// has AVX2 + FMA + F16C and not what the AVX-512 copies need: jit/hand_kernels.cpp.
#include <immintrin.h>

#include <cmath>

#include "graph/attention_row.h"
#include "graph/layer_ops_kernels.h"
#include "runtime/quants/f16_rows.h"

namespace ckjit::graph::kernels {
namespace {

__attribute__((target("avx2,fma,f16c"))) inline __m256 load_h8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
__attribute__((target("avx2,fma,f16c"))) inline void store_h8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// GCC's _mm512_reduce_add_ps (avx512fintrin.h) on the zmm (lo, hi): t3 = hi + lo (8 lanes), t6 =
// upper + lower 128-bit halves of t3, t8 = t6 + t6 shuffled {2,3,0,1}, result t8[0] + t8[1].
__attribute__((target("avx2,fma,f16c"))) inline float reduce_add_16(__m256 lo, __m256 hi) {
  const __m256 t3 = _mm256_add_ps(hi, lo);
  const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
  const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtss_f32(_mm_add_ss(t8, _mm_movehdup_ps(t8)));
}

// The AVX-512 copy's pieces with each 16-lane accumulator as two ymm halves (lanes 0-7, 8-15).
struct Avx2 {
  __attribute__((target("f16c"))) static float h2f(uint16_t h) { return _cvtsh_ss(h); }
  __attribute__((target("f16c"))) static uint16_t f2h(float f) { return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }
  static void to_f16(const float* x, uint16_t* y, int64_t n) { quant::f32_to_f16_rows_avx2(x, y, n); }

  // Accumulator j as (lj, hj). Named variables, not arrays: GCC kept an array of accumulators on
  // the stack (a store and a reload per FMA, 2x slower).
  __attribute__((target("avx2,fma,f16c"))) static float dot(const uint16_t* x, const float* y, int64_t n) {
    const int64_t np = n & ~int64_t(63);
    __m256 l0 = _mm256_setzero_ps(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0;
    for (int64_t i = 0; i < np; i += 64) {
      l0 = _mm256_fmadd_ps(load_h8(x + i), _mm256_loadu_ps(y + i), l0);
      h0 = _mm256_fmadd_ps(load_h8(x + i + 8), _mm256_loadu_ps(y + i + 8), h0);
      l1 = _mm256_fmadd_ps(load_h8(x + i + 16), _mm256_loadu_ps(y + i + 16), l1);
      h1 = _mm256_fmadd_ps(load_h8(x + i + 24), _mm256_loadu_ps(y + i + 24), h1);
      l2 = _mm256_fmadd_ps(load_h8(x + i + 32), _mm256_loadu_ps(y + i + 32), l2);
      h2 = _mm256_fmadd_ps(load_h8(x + i + 40), _mm256_loadu_ps(y + i + 40), h2);
      l3 = _mm256_fmadd_ps(load_h8(x + i + 48), _mm256_loadu_ps(y + i + 48), l3);
      h3 = _mm256_fmadd_ps(load_h8(x + i + 56), _mm256_loadu_ps(y + i + 56), h3);
    }
    // (a0 + a2) + (a1 + a3) per half, as the AVX-512 copy.
    const __m256 lo = _mm256_add_ps(_mm256_add_ps(l0, l2), _mm256_add_ps(l1, l3));
    const __m256 hi = _mm256_add_ps(_mm256_add_ps(h0, h2), _mm256_add_ps(h1, h3));
    return float(row::dot_tail<Avx2>(x, y, np, n, double(reduce_add_16(lo, hi))));
  }

  __attribute__((target("avx2,fma,f16c"))) static void scale(uint16_t* y, int64_t n, float v) {
    const int64_t np = n & ~int64_t(63);
    const __m256 vv = _mm256_set1_ps(v);
    for (int64_t i = 0; i < np; i += 8) store_h8(y + i, _mm256_mul_ps(load_h8(y + i), vv));
    row::scale_tail<Avx2>(y, np, n, v);
  }

  __attribute__((target("avx2,fma,f16c"))) static void mad(uint16_t* y, const uint16_t* x, int64_t n, float v) {
    const int64_t np = n & ~int64_t(63);
    const __m256 vv = _mm256_set1_ps(v);
    for (int64_t i = 0; i < np; i += 8) store_h8(y + i, _mm256_fmadd_ps(load_h8(x + i), vv, load_h8(y + i)));
    row::mad_tail<Avx2>(y, x, np, n, v);
  }
};

// ---- llama.cpp's swiglu, the AVX-512 order on 8 lanes ----

// 2^k from exponent bits, |k| <= 126.
__attribute__((target("avx2,fma"))) inline __m256 pow2i(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

// _mm512_scalef_ps(p, n) for integral n with |n| <= 192 and p in [0.5, 2) (the lanes exp_llama keeps):
// p * 2^k1 with k1 = floor(n/2) is exact (a normal float), the product with 2^(n-k1) rounds once —
// the correctly rounded p * 2^n that scalef returns, denormal or overflowing results included.
__attribute__((target("avx2,fma"))) inline __m256 scalef_avx2(__m256 p, __m256 n) {
  const __m256i k = _mm256_cvttps_epi32(n);
  const __m256i k1 = _mm256_srai_epi32(k, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2i(k1)), pow2i(_mm256_sub_epi32(k, k1)));
}

// exp_llama_avx512 lane for lane on 8 lanes.
__attribute__((target("avx2,fma"))) inline __m256 exp_llama_avx2(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 abs_n = _mm256_and_ps(n, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  const __m256 big = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192), _CMP_GT_OQ);
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 p = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  const __m256 res = scalef_avx2(p, n);
  const __m256 alt = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), _mm256_setzero_ps(),
                                      _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ));
  return _mm256_blendv_ps(res, alt, big);
}

__attribute__((target("avx2,fma"))) inline void swiglu8_avx2(const float* g, const float* u, float* y) {
  const __m256 x = _mm256_loadu_ps(g);
  const __m256 e = exp_llama_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x));
  const __m256 s = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  _mm256_storeu_ps(y, _mm256_mul_ps(s, _mm256_loadu_ps(u)));
}

}  // namespace

void attention_row_avx2(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* k, const uint16_t* v,
                        int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores) {
  row::attention_row<Avx2>(s, q, n_keys, k, v, kv_width, out, qh, acc, scores);
}

// Whole 16-element chunks as the AVX-512 copy, so the scalar tail covers the same elements.
__attribute__((target("avx2,fma"))) void swiglu_avx2(const float* g, const float* u, float* y, int64_t n) {
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    swiglu8_avx2(g + i, u + i, y + i);
    swiglu8_avx2(g + i + 8, u + i + 8, y + i + 8);
  }
  swiglu_tail(g, u, y, n / 16 * 16, n);
}

}  // namespace ckjit::graph::kernels
