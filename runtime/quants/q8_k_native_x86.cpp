// The AVX2 and AVX-512 Q8_K quantizers of q8_k_native.h (x86 builds only: runtime/CMakeLists.txt).
#include <immintrin.h>

#include <algorithm>

#include "runtime/gcc12_avx512_warnings.h"
#include "runtime/quants/q8_k_native.h"
#include "runtime/quants/q8_k_native_block.h"

namespace ckjit::quant {

using namespace q8k_native;

CKJIT_AVX512_INTRINSICS_BEGIN
// block_max on 16 lanes: the maximum of |x| (vmaxps keeps the running max where x is NaN, as the
// scan skips NaNs), then the first element that reaches it, found by a compare mask per 16.
__attribute__((target("avx512f,avx512bw"))) inline float block_max_avx512(const float* x, float& amax) {
  const __m512 abs_mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
  __m512 m = _mm512_setzero_ps();
  for (int j = 0; j < QK_K; j += 16)
    m = _mm512_max_ps(_mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + j)), _mm512_castps_si512(abs_mask))), m);
  amax = _mm512_reduce_max_ps(m);
  const __m512 target = _mm512_set1_ps(amax);
  for (int j = 0; j < QK_K; j += 16) {
    const __m512 ax = _mm512_castsi512_ps(_mm512_and_si512(_mm512_castps_si512(_mm512_loadu_ps(x + j)), _mm512_castps_si512(abs_mask)));
    const __mmask16 hit = _mm512_cmp_ps_mask(ax, target, _CMP_EQ_OQ);
    if (hit) return x[j + __builtin_ctz(unsigned(hit))];
  }
  return 0.0f;
}

__attribute__((target("avx512f,avx512bw"))) void quantize_row_q8_K_fma_avx512(const float* x, BlockQ8_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  const __m512 magic = _mm512_set1_ps(kMagic);
  const __m512i mant = _mm512_set1_epi32(0x007fffff), bias = _mm512_set1_epi32(0x00400000), hi = _mm512_set1_epi32(127);
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    BlockQ8_K& b = y[i];
    float amax, iscale;
    const float mx = block_max_avx512(x, amax);
    if (!start_block(mx, amax, b, iscale)) continue;
    const __m512 is = _mm512_set1_ps(iscale);
    for (int j = 0; j < QK_K; j += 16) {  // 16 quants: one bsums group
      __m512 v = _mm512_fmadd_ps(is, _mm512_loadu_ps(x + j), magic);
      __m512i q = _mm512_sub_epi32(_mm512_and_si512(_mm512_castps_si512(v), mant), bias);
      q = _mm512_min_epi32(q, hi);
      // Truncating (vpmovdb), as the scalar int8_t conversion, where 127/max overflowed to inf.
      const __m128i q8 = _mm512_cvtepi32_epi8(q);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(b.qs + j), q8);
      b.bsums[j / 16] = int16_t(_mm512_reduce_add_epi32(_mm512_cvtepi8_epi32(q8)));  // the stored int8s, as finish_block sums
    }
    b.d = 1.0f / iscale;
  }
}
CKJIT_AVX512_INTRINSICS_END

// The first element of largest |x| (what block_max's strict '>' scan finds), vectorized: the
// maximum of |x| (NaNs skipped, as the scan skips them), then the first element that reaches it.
__attribute__((target("avx2,fma"))) inline float block_max_avx2(const float* x, float& amax) {
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 m = _mm256_setzero_ps();
  for (int j = 0; j < QK_K; j += 8) m = _mm256_max_ps(_mm256_and_ps(_mm256_loadu_ps(x + j), abs_mask), m);
  __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
  h = _mm_max_ps(h, _mm_movehl_ps(h, h));
  h = _mm_max_ss(h, _mm_movehdup_ps(h));
  amax = _mm_cvtss_f32(h);
  for (int j = 0; j < QK_K; ++j)
    if (std::fabs(x[j]) == amax) return x[j];
  return 0.0f;
}

__attribute__((target("avx2,fma"))) void quantize_row_q8_K_fma_avx2(const float* x, BlockQ8_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  const __m256 magic = _mm256_set1_ps(kMagic);
  const __m256i mant = _mm256_set1_epi32(0x007fffff), bias = _mm256_set1_epi32(0x00400000), hi = _mm256_set1_epi32(127);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);  // undoes packs' per-128-bit-lane interleave
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    BlockQ8_K& b = y[i];
    float amax, iscale;
    const float mx = block_max_avx2(x, amax);
    if (!start_block(mx, amax, b, iscale)) continue;
    const __m256 is = _mm256_set1_ps(iscale);
    for (int j = 0; j < QK_K; j += 32) {
      __m256i q[4];
      for (int t = 0; t < 4; ++t) {
        const __m256 v = _mm256_fmadd_ps(is, _mm256_loadu_ps(x + j + 8 * t), magic);
        q[t] = _mm256_min_epi32(_mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(v), mant), bias), hi);
      }
      // The low byte of each int32, as the scalar int8_t conversion (it matters only where 127/max
      // overflowed to inf: those quants are 0, not -128).
      const __m256i low = _mm256_set1_epi32(0xff);
      for (__m256i& t : q) t = _mm256_and_si256(t, low);
      const __m256i w = _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3]));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(b.qs + j), _mm256_permutevar8x32_epi32(w, order));
    }
    finish_block(b, iscale);
  }
}

}  // namespace ckjit::quant
