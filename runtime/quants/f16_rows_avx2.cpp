// The AVX2 + F16C copies of f16_rows.h (x86 builds only: runtime/CMakeLists.txt).
#include <immintrin.h>

#include "runtime/quants/f16_rows.h"
#include "runtime/quants/quants.h"

namespace ckjit::quant {

__attribute__((target("avx2,fma,f16c"))) void f32_to_f16_rows_avx2(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = uint16_t(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx2,f16c"))) void round_f16_rows_avx2(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
  for (; i < n; ++i) y[i] = f16_to_f32(f32_to_f16(x[i]));
}

}  // namespace ckjit::quant
