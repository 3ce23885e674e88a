#include "runtime/quants/vec_dot_avx2.h"

#include <immintrin.h>

namespace ckjit::quant {

// Blocks ahead the Q6_K dot asks the cache for (as vec_dot_x2_avx512.cpp's two-row dot).
constexpr int64_t kQ6Ahead = 4;

// Lane L of the 8 int32 accumulators holds elements 4L..4L+3 of every 32-element chunk (the
// _mm256_maddubs_epi16 / _mm256_madd_epi16 pairing); lanes 0-3 take the chunk's first 16-element
// scale, lanes 4-7 the second. The -32 offset is removed with the bsums (C[L]) per super-block:
//   acc[L] = fma(D·f16(d), float(T[L] − 32·(bsums[2L]·sc[2L] + bsums[2L+1]·sc[2L+1])), acc[L])
// and the result is ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
__attribute__((target("avx2,fma,f16c"))) float vec_dot_q6_K_q8_K_avx2(const BlockQ6_K* x, const BlockQ8_K* y,
                                                                      int64_t n) {
  const int64_t nb = n / QK_K;
  const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x03);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    if (i + kQ6Ahead < nb)  // the weight row streams from DRAM in decode; no effect on the sums
      for (int l = 0; l < 256; l += 64) _mm_prefetch(reinterpret_cast<const char*>(x + i + kQ6Ahead) + l, _MM_HINT_T0);
    const float d = y[i].d * _cvtsh_ss(x[i].d);
    const uint8_t* ql = x[i].ql;
    const uint8_t* qh = x[i].qh;
    const int8_t* r = y[i].qs;
    const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x[i].scales));
    const __m256i sc16 = _mm256_cvtepi8_epi16(sc8);  // the 16 scales as int16
    __m256i T = _mm256_setzero_si256();
    for (int half = 0; half < 2; ++half, ql += 64, qh += 32, r += 128) {
      const __m256i l0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql));
      const __m256i l1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 32));
      const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh));
      __m256i u[4];
      u[0] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_slli_epi16(_mm256_and_si256(h, m2), 4));
      u[1] = _mm256_or_si256(_mm256_and_si256(l1, m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2), m2), 4));
      u[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 4), m2), 4));
      u[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                             _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 6), m2), 4));
      for (int c = 0; c < 4; ++c) {
        const int chunk = 4 * half + c;
        const __m256i rv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 32 * c));
        const __m256i p16 = _mm256_maddubs_epi16(u[c], rv);
        const __m256i s16 = _mm256_set_m128i(_mm_set1_epi16(x[i].scales[2 * chunk + 1]),
                                             _mm_set1_epi16(x[i].scales[2 * chunk]));
        T = _mm256_add_epi32(T, _mm256_madd_epi16(p16, s16));
      }
    }
    const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].bsums));
    const __m256i C = _mm256_slli_epi32(_mm256_madd_epi16(bs, sc16), 5);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_sub_epi32(T, C)), acc);
  }
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

__attribute__((target("avx2,fma,f16c"))) float vec_dot_q8_0_q8_0_avx2(const BlockQ8_0* x, const BlockQ8_0* y,
                                                                      int64_t n) {
  const int64_t nb = n / QK8_0;
  const __m256i ones = _mm256_set1_epi16(1);
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    const float d = _cvtsh_ss(x[i].d) * _cvtsh_ss(y[i].d);
    const __m256i qx = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[i].qs));
    const __m256i qy = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[i].qs));
    // |x| (unsigned) times y with x's sign: exact int16 pair sums, then int32 quads.
    const __m256i p16 = _mm256_maddubs_epi16(_mm256_sign_epi8(qx, qx), _mm256_sign_epi8(qy, qx));
    const __m256i p32 = _mm256_madd_epi16(p16, ones);
    acc = _mm256_fmadd_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(p32), acc);
  }
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

}  // namespace ckjit::quant
