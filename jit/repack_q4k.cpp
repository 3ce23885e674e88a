// Load-time repacking of Q4_K rows into 16- or 8-row panels (layout in packed_weights.h).
#include <cstddef>

#include "jit/repack_panels.h"

namespace ckjit::jit {

namespace {

// One row's block: the qs quads transposed into the row's 4-byte slots, then the scales.
void pack_row(const Q4KPanelLayout& L, const quant::BlockQ4_K& x, uint8_t* dst, int l) {
  for (int c = 0; c < 4; ++c)
    for (int j = 0; j < 8; ++j) std::memcpy(dst + L.qs(c, j) + l * 4, x.qs + 32 * c + 4 * j, 4);
  detail::put_k4_scales(L, x, dst, l);
}

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
CKJIT_AVX2 void pack_full(const Q4KPanelLayout& L, const quant::BlockQ4_K* x, int64_t stride, uint8_t* dst) {
  static_assert(offsetof(quant::BlockQ4_K, qs) == offsetof(quant::BlockQ4_K, scales) + 12);
  for (int h = 0; h < L.P / 8; ++h) {
    const quant::BlockQ4_K* r = x + 8 * h * stride;
    for (int c = 0; c < 4; ++c) {
      const uint8_t* rows[8];
      for (int i = 0; i < 8; ++i) rows[i] = r[i * stride].qs + 32 * c;
      detail::transpose8x8_32(rows, dst + L.qs(c, 0) + 32 * h, L.P * 4);
    }
    __m128i sm[8];
    for (int i = 0; i < 8; ++i) sm[i] = k4_scales_mins(r[i * stride].scales);
    detail::transpose8x16_8(sm, dst + L.sc(0) + 8 * h, L.P);  // mn(s) = sc(8 + s)
  }
  for (int l = 0; l < L.P; ++l) {
    std::memcpy(dst + L.d() + 2 * l, &x[l * stride].d, 2);
    std::memcpy(dst + L.dmin() + 2 * l, &x[l * stride].dmin, 2);
  }
}

}  // namespace

PackedWeights repack_q4_K(const quant::BlockQ4_K* src, int64_t n, int64_t k, int panel, int threads, bool simd) {
  const Q4KPanelLayout L{panel};
  return detail::repack_panels(
      TensorType::Q4_K, src, n, k, panel, threads, L.bytes(), simd,
      [&](const quant::BlockQ4_K& x, uint8_t* dst, int l) { pack_row(L, x, dst, l); },
      [&](const quant::BlockQ4_K* x, int64_t stride, uint8_t* dst) { pack_full(L, x, stride, dst); });
}

void unpack_q4_K(const PackedWeights& w, quant::BlockQ4_K* dst) {
  if (w.type != TensorType::Q4_K) throw Error("unpack_q4_K: weights are not Q4_K");
  const Q4KPanelLayout L{w.panel};
  detail::unpack_panels(w, dst, [&](const uint8_t* s, int l, quant::BlockQ4_K& x) {
    for (int c = 0; c < 4; ++c)
      for (int j = 0; j < 8; ++j) std::memcpy(x.qs + 32 * c + 4 * j, s + L.qs(c, j) + l * 4, 4);
    detail::get_k4_scales(L, s, l, x);
  });
}

}  // namespace ckjit::jit
