#pragma once
// f32 -> bf16 (nearest even) with AVX512-BF16's vcvtneps2bf16: the inputs of the AMX-BF16 kernels
// (callers run it only where those kernels run, so the instruction is there).
#include <immintrin.h>

#include <cstdint>

#include "runtime/gcc12_avx512_warnings.h"

namespace ckjit::jit {

CKJIT_AVX512_INTRINSICS_BEGIN
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) inline void to_bf16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(_mm512_loadu_ps(x + i))));
  if (i < n) {
    const __mmask16 m = __mmask16((1u << (n - i)) - 1);
    const __m256bh v = _mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, x + i));
    _mm256_mask_storeu_epi16(y + i, m, reinterpret_cast<__m256i>(v));
  }
}
CKJIT_AVX512_INTRINSICS_END

}  // namespace ckjit::jit
