// The full-panel packers on AVX2 (repack_full.h): 8 x 8 transposes of 8 rows' quads, scales and
// sums, the same bytes as the row walk of repack_q4k / q6k / q80.cpp (test_jit_matmul compares).
#include <cstddef>
#include <cstring>

#include "jit/isa_select.h"
#include "jit/repack_full.h"
#include "jit/transpose_avx2.h"

namespace ckjit::jit::detail {

namespace {

// unpack_k4_scales of one block as one vector: bytes 0-7 the 6-bit scales, 8-15 the mins (the
// order of the layout's sc and mn rows). s: the 12 packed bytes (16 are read: qs follows them).
CKJIT_AVX2_INLINE __m128i k4_scales_mins(const uint8_t* s) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(s));
  // Low bits: sc0-3 = s0-3, sc4-7 = s8-11 (low nibble), mn0-3 = s4-7, mn4-7 = s8-11 (high nibble).
  const __m128i lo = _mm_shuffle_epi8(v, _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11));
  // High 2 bits of sc4-7 / mn4-7: the top bits of s0-3 / s4-7 (zero elsewhere).
  const __m128i hi = _mm_shuffle_epi8(v, _mm_setr_epi8(-1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, 4, 5, 6, 7));
  const __m128i m_lo = _mm_setr_epi8(63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 0, 0, 0, 0);
  const __m128i m_nib = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 15, 15, 15, 15);
  // The 16-bit shifts carry bits across bytes; the per-byte masks drop them.
  const __m128i low = _mm_or_si128(_mm_and_si128(lo, m_lo), _mm_and_si128(_mm_srli_epi16(lo, 4), m_nib));
  return _mm_or_si128(low, _mm_and_si128(_mm_srli_epi16(hi, 2), _mm_set1_epi8(0x30)));
}

// A full panel's block: qs pair c of 8 rows is an 8 x 8 transpose of quads (row i's 32 bytes in,
// quad j of every row out), so each output store is 32 bytes; the unpacked scales and mins of 8
// rows are one byte transpose into the sc and mn rows. The layout has no padding.
CKJIT_AVX2 void pack_full_q4k(const Q4KPanelLayout& L, const quant::BlockQ4_K* x, int64_t stride, uint8_t* dst) {
  static_assert(offsetof(quant::BlockQ4_K, qs) == offsetof(quant::BlockQ4_K, scales) + 12);
  for (int h = 0; h < L.P / 8; ++h) {
    const quant::BlockQ4_K* r = x + 8 * h * stride;
    for (int c = 0; c < 4; ++c) {
      const uint8_t* rows[8];
      for (int i = 0; i < 8; ++i) rows[i] = r[i * stride].qs + 32 * c;
      transpose8x8_32(rows, dst + L.qs(c, 0) + 32 * h, L.P * 4);
    }
    __m128i sm[8];
    for (int i = 0; i < 8; ++i) sm[i] = k4_scales_mins(r[i * stride].scales);
    transpose8x16_8(sm, dst + L.sc(0) + 8 * h, L.P);  // mn(s) = sc(8 + s)
  }
  for (int l = 0; l < L.P; ++l) {
    std::memcpy(dst + L.d() + 2 * l, &x[l * stride].d, 2);
    std::memcpy(dst + L.dmin() + 2 * l, &x[l * stride].dmin, 2);
  }
}

// q6k_quants with 32 quants per vector: the 16-bit shifts carry bits across bytes, which the
// per-byte masks then drop.
CKJIT_AVX2 void q6k_quants_avx2(const quant::BlockQ6_K& b, uint8_t u[256]) {
  const __m256i m4 = _mm256_set1_epi8(0x0F), m30 = _mm256_set1_epi8(0x30);
  for (int h = 0; h < 2; ++h) {
    const __m256i lo0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h));
    const __m256i lo1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.ql + 64 * h + 32));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qh + 32 * h));
    const __m256i v[4] = {
        _mm256_or_si256(_mm256_and_si256(lo0, m4), _mm256_and_si256(_mm256_slli_epi16(hi, 4), m30)),
        _mm256_or_si256(_mm256_and_si256(lo1, m4), _mm256_and_si256(_mm256_slli_epi16(hi, 2), m30)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo0, 4), m4), _mm256_and_si256(hi, m30)),
        _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(lo1, 4), m4), _mm256_and_si256(_mm256_srli_epi16(hi, 2), m30))};
    for (int q = 0; q < 4; ++q) _mm256_storeu_si256(reinterpret_cast<__m256i*>(u + 128 * h + 32 * q), v[q]);
  }
}

// A full panel's block: every 8 quads (32 bytes) of 8 rows' quants is one 8 x 8 transpose.
CKJIT_AVX2 void pack_full_q6k(const Q6KPanelLayout& L, const quant::BlockQ6_K* x, int64_t stride, uint8_t* dst) {
  alignas(32) uint8_t u[8][256];
  for (int h = 0; h < L.P / 8; ++h) {
    const uint8_t* rows[8];
    for (int i = 0; i < 8; ++i) q6k_quants_avx2(x[(8 * h + i) * stride], u[i]);
    for (int g = 0; g < 8; ++g) {
      for (int i = 0; i < 8; ++i) rows[i] = u[i] + 32 * g;
      transpose8x8_32(rows, dst + L.u(8 * g) + 32 * h, L.P * 4);
    }
    // The 8 scale pairs of 8 rows: a transpose of 16-bit pairs.
    for (int i = 0; i < 8; ++i) rows[i] = reinterpret_cast<const uint8_t*>(x[(8 * h + i) * stride].scales);
    transpose8x8_16(rows, dst + L.scp(0) + 16 * h, L.P * 2);
  }
  for (int l = 0; l < L.P; ++l) std::memcpy(dst + L.d() + 2 * l, &x[l * stride].d, 2);
  std::memset(dst + L.d() + 2 * L.P, 0, size_t(L.bytes() - L.d() - 2 * L.P));  // the padding
}

// Σ of the 32 int8 quants: psadbw sums unsigned bytes, so the quants are offset by 128 (x ^ 0x80)
// and 32 * 128 taken off again; integer, so exactly pack_row's sum.
CKJIT_AVX2 int32_t quant_sum(const int8_t* qs) {
  const __m256i v = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs)), _mm256_set1_epi8(char(0x80)));
  const __m256i s = _mm256_sad_epu8(v, _mm256_setzero_si256());
  const __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  return int32_t(_mm_cvtsi128_si64(_mm_add_epi64(t, _mm_unpackhi_epi64(t, t)))) - 32 * 128;
}

// A full panel's block: the 8 quads of 8 rows are one 8 x 8 transpose.
CKJIT_AVX2 void pack_full_q80(const Q80PanelLayout& L, const quant::BlockQ8_0* x, int64_t stride, uint8_t* dst) {
  for (int h = 0; h < L.P / 8; ++h) {
    const uint8_t* rows[8];
    for (int i = 0; i < 8; ++i) rows[i] = reinterpret_cast<const uint8_t*>(x[(8 * h + i) * stride].qs);
    transpose8x8_32(rows, dst + L.qs(0) + 32 * h, L.P * 4);
  }
  for (int l = 0; l < L.P; ++l) {
    const int32_t sum = quant_sum(x[l * stride].qs);
    std::memcpy(dst + L.d() + 2 * l, &x[l * stride].d, 2);
    std::memcpy(dst + L.wsum() + 4 * l, &sum, 4);
  }
  std::memset(dst + L.wsum() + 4 * L.P, 0, size_t(L.bytes() - L.wsum() - 4 * L.P));  // the padding
}

}  // namespace

const FullPackers* full_packers() {
  static const FullPackers avx2{"avx2", pack_full_q4k, pack_full_q6k, pack_full_q80};
  return runtime_isa().avx2 ? &avx2 : nullptr;
}

}  // namespace ckjit::jit::detail
