#pragma once
// The online-softmax step of the attention tile (jit/attention_tile.h), which the decoder's causal
// attention and the vision tower's full attention share: AVX2 code, the floor every ckjit CPU
// runs, so the bits are the same on every ISA path. In jit/, below graph/ and vision/, so both may
// include it. Its portable twin, the same float order lane by lane: tile_softmax_twin.h.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "jit/tile_softmax_poly.h"
#include "runtime/gcc12_avx512_warnings.h"

namespace ckjit::jit {

// exp on 8 lanes. Inputs at or below -88 (masked keys: -inf) give exactly 0: the exponent field
// of 2^-127 is 0.
__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(exp_poly::kMin));
  x = _mm256_min_ps(x, _mm256_set1_ps(exp_poly::kMax));
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(exp_poly::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(exp_poly::kLn2Hi), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(exp_poly::kLn2Lo), x);
  __m256 y = _mm256_set1_ps(exp_poly::kP[0]);
  for (int i = 1; i < 6; ++i) y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(exp_poly::kP[i]));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2"))) inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
__attribute__((target("avx2"))) inline float hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Online-softmax step of one score row s (nk raw dot products, `valid` of them real keys): scaled
// by `scale`, folded into the running max m and sum l; s becomes exp(s * scale - m). Returns alpha,
// the factor the row's earlier output must be multiplied by (exactly 1 when no key of s is valid:
// masked keys then leave the row as it was).
__attribute__((target("avx2,fma"))) inline float softmax_step(float* s, int64_t nk, int64_t valid, float scale, float& m, float& l) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t j = valid; j < nk; ++j) s[j] = ninf;
  __m256 mx = _mm256_loadu_ps(s);
  for (int64_t j = 8; j < nk; j += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
  const float m_new = std::max(m, hmax8(mx) * scale);  // scale > 0: the max of the scaled scores
  const float alpha = m == ninf ? 0.0f : _mm256_cvtss_f32(exp8(_mm256_set1_ps(m - m_new)));
  const __m256 mv = _mm256_set1_ps(m_new), sc = _mm256_set1_ps(scale);
  __m256 sum = _mm256_setzero_ps();
  for (int64_t j = 0; j < nk; j += 8) {
    const __m256 p = exp8(_mm256_fmsub_ps(_mm256_loadu_ps(s + j), sc, mv));
    _mm256_storeu_ps(s + j, p);
    sum = _mm256_add_ps(sum, p);
  }
  l = l * alpha + hsum8(sum);
  m = m_new;
  return alpha;
}

CKJIT_AVX512_INTRINSICS_BEGIN
// exp8 on 16 lanes (AVX-512): the same lane-wise operations, so every lane has exp8's bits.
__attribute__((target("avx512f"))) inline __m512 exp16(__m512 x) {
  x = _mm512_max_ps(x, _mm512_set1_ps(exp_poly::kMin));
  x = _mm512_min_ps(x, _mm512_set1_ps(exp_poly::kMax));
  const __m512 fx = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(exp_poly::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(exp_poly::kLn2Hi), x);
  x = _mm512_fnmadd_ps(fx, _mm512_set1_ps(exp_poly::kLn2Lo), x);
  __m512 y = _mm512_set1_ps(exp_poly::kP[0]);
  for (int i = 1; i < 6; ++i) y = _mm512_fmadd_ps(y, x, _mm512_set1_ps(exp_poly::kP[i]));
  y = _mm512_fmadd_ps(y, _mm512_mul_ps(x, x), _mm512_add_ps(x, _mm512_set1_ps(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(fx), _mm512_set1_epi32(127)), 23);
  return _mm512_mul_ps(y, _mm512_castsi512_ps(e));
}

// softmax_step on R rows at once with 16-lane exps (the AVX-512 tile, whose blocks are whole
// 16-key panels; S rows lds floats apart, nk a multiple of 16). The rows' max, exp and sum chains
// interleave, so one row's add latency does not stall the loop. Per row: the max is order-free,
// each exp is exp8's, and the sum adds the low then the high 8 lanes of each 16 into
// softmax_step's 8-lane sum, its order: the same bits as softmax_step. alpha[r]: the factor of
// row r's earlier output.
template <int R>
__attribute__((target("avx512f,avx2,fma"))) inline void softmax_rows16(float* s, int64_t lds, int64_t nk, const int64_t* valid,
                                                                       float scale, float* m, float* l, float* alpha) {
  const float ninf = -std::numeric_limits<float>::infinity();
  __m512 mx16[R];
  for (int r = 0; r < R; ++r) {
    float* sr = s + r * lds;
    for (int64_t j = valid[r]; j < nk; ++j) sr[j] = ninf;
    mx16[r] = _mm512_loadu_ps(sr);
  }
  for (int64_t j = 16; j < nk; j += 16)
    for (int r = 0; r < R; ++r) mx16[r] = _mm512_max_ps(mx16[r], _mm512_loadu_ps(s + r * lds + j));
  __m512 mv[R];
  __m256 sum[R];
  float m_new[R];
  for (int r = 0; r < R; ++r) {
    const __m256 mx = _mm256_max_ps(_mm512_castps512_ps256(mx16[r]), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(mx16[r]), 1)));
    m_new[r] = std::max(m[r], hmax8(mx) * scale);
    alpha[r] = m[r] == ninf ? 0.0f : _mm256_cvtss_f32(exp8(_mm256_set1_ps(m[r] - m_new[r])));
    mv[r] = _mm512_set1_ps(m_new[r]);
    sum[r] = _mm256_setzero_ps();
  }
  const __m512 sc = _mm512_set1_ps(scale);
  for (int64_t j = 0; j < nk; j += 16)
    for (int r = 0; r < R; ++r) {
      float* sr = s + r * lds + j;
      const __m512 p = exp16(_mm512_fmsub_ps(_mm512_loadu_ps(sr), sc, mv[r]));
      _mm512_storeu_ps(sr, p);
      sum[r] = _mm256_add_ps(sum[r], _mm512_castps512_ps256(p));
      sum[r] = _mm256_add_ps(sum[r], _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(p), 1)));
    }
  for (int r = 0; r < R; ++r) {
    l[r] = l[r] * alpha[r] + hsum8(sum[r]);
    m[r] = m_new[r];
  }
}
CKJIT_AVX512_INTRINSICS_END

}  // namespace ckjit::jit
