// The AVX2 + F16C copies of vision_ops' kernels (vision_ops_kernels.h); chosen by
// jit/hand_kernels.cpp where the load's Isa has AVX2 + FMA + F16C.
#include <immintrin.h>

#include "runtime/quants/quants.h"
#include "vision/vision_ops_kernels.h"

namespace ckjit::vision::kernels {

// 8 at a time: the f16 bits of x (vcvtps2ph) index the table (a gather), the ends blended in.
__attribute__((target("avx2,f16c"))) void gelu_rows_avx2(const float* table, float* x, int64_t n) {
  int64_t i = 0;
  const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    __m256 g = _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(h), 4);
    g = _mm256_blendv_ps(g, _mm256_setzero_ps(), _mm256_cmp_ps(v, lo, _CMP_LE_OQ));
    g = _mm256_blendv_ps(g, v, _mm256_cmp_ps(v, hi, _CMP_GE_OQ));
    _mm256_storeu_ps(x + i, g);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    x[i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : table[quant::f32_to_f16(v)];
  }
}

}  // namespace ckjit::vision::kernels
