#pragma once
// 8 x 8 transposes for the load-time repacks: row i of the input is one source row's run of 8
// elements, row j of the output holds element j of every source row, in source-row order. The
// panel layouts interleave rows exactly this way (a 4-byte quad or one 16-bit / 32-bit value per
// row), so a transpose writes whole 32- or 16-byte runs where a scalar walk writes 2 or 4 bytes.
// Callers run them only where the process may run AVX2 (repack_full_avx2.cpp's full_packers(),
// vision/dense_linear.cpp's list).
#include <immintrin.h>

#include <cstdint>

namespace ckjit::jit::detail {

#define CKJIT_AVX2 __attribute__((target("avx2")))
// Inlined into their (CKJIT_AVX2) callers: a call per 8 x 8 block spills the row pointers.
#define CKJIT_AVX2_INLINE __attribute__((target("avx2"), always_inline)) inline

// 8 x 8 of 32-bit elements: src[i] points at 8 elements of row i; output row j goes to
// dst + j * dst_stride (bytes; unaligned is fine).
CKJIT_AVX2_INLINE void transpose8x8_32(const uint8_t* const src[8], uint8_t* dst, int64_t dst_stride) {
  __m256 r[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src[i]));
  // Pairs of rows interleaved, then pairs of pairs, then the 128-bit halves: the classic three
  // steps; the float shuffles only move bits.
  __m256 t[8], s[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm256_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm256_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {
    const __m256 a = t[4 * h], b = t[4 * h + 1], c = t[4 * h + 2], d = t[4 * h + 3];
    s[4 * h + 0] = _mm256_shuffle_ps(a, c, 0x44);
    s[4 * h + 1] = _mm256_shuffle_ps(a, c, 0xEE);
    s[4 * h + 2] = _mm256_shuffle_ps(b, d, 0x44);
    s[4 * h + 3] = _mm256_shuffle_ps(b, d, 0xEE);
  }
  for (int j = 0; j < 4; ++j) {
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + j * dst_stride), _mm256_permute2f128_ps(s[j], s[4 + j], 0x20));
    _mm256_storeu_ps(reinterpret_cast<float*>(dst + (4 + j) * dst_stride), _mm256_permute2f128_ps(s[j], s[4 + j], 0x31));
  }
}

// 8 x 8 of 16-bit elements, as transpose8x8_32.
CKJIT_AVX2_INLINE void transpose8x8_16(const uint8_t* const src[8], uint8_t* dst, int64_t dst_stride) {
  __m128i r[8], a[8], b[8];
  for (int i = 0; i < 8; ++i) r[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src[i]));
  for (int i = 0; i < 4; ++i) {
    a[2 * i] = _mm_unpacklo_epi16(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi16(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h)
    for (int q = 0; q < 2; ++q) {
      b[4 * h + 2 * q] = _mm_unpacklo_epi32(a[4 * h + q], a[4 * h + 2 + q]);
      b[4 * h + 2 * q + 1] = _mm_unpackhi_epi32(a[4 * h + q], a[4 * h + 2 + q]);
    }
  // b[0..3] hold rows 0-3 of output columns (0,1), (2,3), (4,5), (6,7); b[4..7] rows 4-7.
  for (int q = 0; q < 4; ++q) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * q) * dst_stride), _mm_unpacklo_epi64(b[q], b[4 + q]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + (2 * q + 1) * dst_stride), _mm_unpackhi_epi64(b[q], b[4 + q]));
  }
}

// 8 rows of 16 bytes, transposed: byte q of rows 0..7 goes to the 8 bytes at dst + q * dst_stride.
CKJIT_AVX2_INLINE void transpose8x16_8(const __m128i r[8], uint8_t* dst, int64_t dst_stride) {
  __m128i a[8], b[8];
  for (int i = 0; i < 4; ++i) {  // 16-bit units q: (row 2i, row 2i+1) of byte q
    a[2 * i] = _mm_unpacklo_epi8(r[2 * i], r[2 * i + 1]);
    a[2 * i + 1] = _mm_unpackhi_epi8(r[2 * i], r[2 * i + 1]);
  }
  for (int h = 0; h < 2; ++h) {  // 32-bit units: rows 0-3 (b[0..3]) and rows 4-7 (b[4..7])
    b[4 * h + 0] = _mm_unpacklo_epi16(a[4 * h + 0], a[4 * h + 2]);
    b[4 * h + 1] = _mm_unpackhi_epi16(a[4 * h + 0], a[4 * h + 2]);
    b[4 * h + 2] = _mm_unpacklo_epi16(a[4 * h + 1], a[4 * h + 3]);
    b[4 * h + 3] = _mm_unpackhi_epi16(a[4 * h + 1], a[4 * h + 3]);
  }
  // b[g] (g = 0..3) holds rows 0-3 of bytes 4g..4g+3, b[4 + g] rows 4-7 of the same bytes.
  for (int g = 0; g < 4; ++g) {
    const __m128i lo = _mm_unpacklo_epi32(b[g], b[4 + g]), hi = _mm_unpackhi_epi32(b[g], b[4 + g]);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + (4 * g + 0) * dst_stride), lo);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + (4 * g + 1) * dst_stride), _mm_unpackhi_epi64(lo, lo));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + (4 * g + 2) * dst_stride), hi);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + (4 * g + 3) * dst_stride), _mm_unpackhi_epi64(hi, hi));
  }
}

}  // namespace ckjit::jit::detail
