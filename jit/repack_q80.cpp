// Load-time repacking of Q8_0 rows into panels (layout in packed_weights.h).
#include "jit/repack_panels.h"

namespace ckjit::jit {

namespace {

void put_scale_and_sum(const Q80PanelLayout& L, const quant::BlockQ8_0& x, int32_t sum, uint8_t* dst, int l) {
  std::memcpy(dst + L.d() + 2 * l, &x.d, 2);
  std::memcpy(dst + L.wsum() + 4 * l, &sum, 4);
}

void pack_row(const Q80PanelLayout& L, const quant::BlockQ8_0& x, uint8_t* dst, int l) {
  int32_t sum = 0;
  for (int j = 0; j < 8; ++j) std::memcpy(dst + L.qs(j) + 4 * l, x.qs + 4 * j, 4);
  for (int e = 0; e < 32; ++e) sum += x.qs[e];
  put_scale_and_sum(L, x, sum, dst, l);
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
CKJIT_AVX2 void pack_full(const Q80PanelLayout& L, const quant::BlockQ8_0* x, int64_t stride, uint8_t* dst) {
  for (int h = 0; h < L.P / 8; ++h) {
    const uint8_t* rows[8];
    for (int i = 0; i < 8; ++i) rows[i] = reinterpret_cast<const uint8_t*>(x[(8 * h + i) * stride].qs);
    detail::transpose8x8_32(rows, dst + L.qs(0) + 32 * h, L.P * 4);
  }
  for (int l = 0; l < L.P; ++l) put_scale_and_sum(L, x[l * stride], quant_sum(x[l * stride].qs), dst, l);
  std::memset(dst + L.wsum() + 4 * L.P, 0, size_t(L.bytes() - L.wsum() - 4 * L.P));  // the padding
}

}  // namespace

PackedWeights repack_q8_0(const quant::BlockQ8_0* src, int64_t n, int64_t k, int panel, int threads, bool simd) {
  const Q80PanelLayout L{panel};
  return detail::repack_panels(
      TensorType::Q8_0, src, n, k, panel, threads, L.bytes(), simd,
      [&](const quant::BlockQ8_0& x, uint8_t* dst, int l) { pack_row(L, x, dst, l); },
      [&](const quant::BlockQ8_0* x, int64_t stride, uint8_t* dst) { pack_full(L, x, stride, dst); });
}

void unpack_q8_0(const PackedWeights& w, quant::BlockQ8_0* dst) {
  if (w.type != TensorType::Q8_0) throw Error("unpack_q8_0: weights are not Q8_0");
  const Q80PanelLayout L{w.panel};
  detail::unpack_panels(w, dst, [&](const uint8_t* s, int l, quant::BlockQ8_0& x) {
    for (int j = 0; j < 8; ++j) std::memcpy(x.qs + 4 * j, s + L.qs(j) + 4 * l, 4);
    std::memcpy(&x.d, s + L.d() + 2 * l, 2);
  });
}

}  // namespace ckjit::jit
