#include "runtime/quants/vec_dot_x2_avx512.h"

#include <immintrin.h>

#include <algorithm>
#include <utility>

#include "runtime/gcc12_avx512_warnings.h"

CKJIT_AVX512_INTRINSICS_BEGIN

namespace ckjit::quant {

namespace {

#define CKJIT_X2_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,f16c,fma")))

// Row 0 in the low 256 bits, row 1 in the high 256 bits.
CKJIT_X2_TARGET inline __m512i load_pair(const void* a, const void* b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(static_cast<const __m256i*>(a))),
                            _mm256_loadu_si256(static_cast<const __m256i*>(b)), 1);
}

// The AVX2 reduction of one half: ((a0+a4)+(a2+a6)) + ((a1+a5)+(a3+a7)).
CKJIT_X2_TARGET inline float reduce_half(__m256 acc) {
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(acc, 1), _mm256_castps256_ps128(acc));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Blocks ahead that the decode GEMV asks the cache for (two weight rows stream from DRAM). Past
// a row's end this is the next row's start, which the GEMV reads next (rows are contiguous; a
// prefetch never faults): asking only within the row left half of each 8-block row (K = 2048)
// unprefetched, 2b decode 17.6 -> 20.0 tok/s on Sapphire Rapids, 2 threads.
constexpr int64_t kAhead = 4;

CKJIT_X2_TARGET inline void prefetch_ahead(const BlockQ6_K* a, const BlockQ6_K* b) {
  for (int l = 0; l < 256; l += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(a + kAhead) + l, _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char*>(b + kAhead) + l, _MM_HINT_T0);
  }
}

// The 6-bit values (0..63) of one half block (128 elements) of both rows: u[c] holds elements
// 32c .. 32c+31 of the half, row 0 in the low 256 bits, row 1 in the high (the AVX2 order's layout).
CKJIT_X2_TARGET inline void unpack_half(const uint8_t* ql0, const uint8_t* ql1, const uint8_t* qh0, const uint8_t* qh1, __m512i u[4]) {
  const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x03);
  const __m512i l0 = load_pair(ql0, ql1), l1 = load_pair(ql0 + 32, ql1 + 32), h = load_pair(qh0, qh1);
  u[0] = _mm512_or_si512(_mm512_and_si512(l0, m4), _mm512_slli_epi16(_mm512_and_si512(h, m2), 4));
  u[1] = _mm512_or_si512(_mm512_and_si512(l1, m4), _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 2), m2), 4));
  u[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l0, 4), m4),
                         _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 4), m2), 4));
  u[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(l1, 4), m4),
                         _mm512_slli_epi16(_mm512_and_si512(_mm512_srli_epi16(h, 6), m2), 4));
}

// Both blocks' 16 sub-block scales as int16: row 0 in lanes 0..15, row 1 in 16..31.
CKJIT_X2_TARGET inline __m512i scales_pair(const BlockQ6_K& a, const BlockQ6_K& b) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.scales)))),
                            _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b.scales))), 1);
}

// One block's float step for one activation row, both weight rows at once: T holds the AVX2
// order's int32 lane sums of the 6-bit values times scales; the 32 * scale * bsums offset is taken
// off, then acc += (d_y * d_w) * float(T - C). The one float order both forms share.
CKJIT_X2_TARGET inline void add_block(__m512i T, const BlockQ8_K& yb, __m512i sc16, float w0, float w1, __m512& acc) {
  const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(yb.bsums)));
  const __m512i C = _mm512_slli_epi32(_mm512_madd_epi16(bs, sc16), 5);
  const __m512 dv = _mm512_insertf32x8(_mm512_set1_ps(yb.d * w0), _mm256_set1_ps(yb.d * w1), 1);
  acc = _mm512_fmadd_ps(dv, _mm512_cvtepi32_ps(_mm512_sub_epi32(T, C)), acc);
}

// Row 0's dot (the low half's AVX2 reduction) to out[0], row 1's to out[1].
CKJIT_X2_TARGET inline void store_pair(__m512 acc, float* out) {
  out[0] = reduce_half(_mm512_castps512_ps256(acc));
  out[1] = reduce_half(_mm512_extractf32x8_ps(acc, 1));
}

// f(rows) for a compile-time rows of 1..Max; more rows in runs of Max.
template <int Max, class F>
inline void in_runs_of(int rows, const BlockQ8_K* const* y, float* out, F&& f) {
  for (int j = 0; j < rows; j += Max) {
    const int r = std::min(Max, rows - j);
    [&]<int... K>(std::integer_sequence<int, K...>) {
      ((r == K + 1 ? f(std::integral_constant<int, K + 1>{}, y + j, out + 2 * j) : void()), ...);
    }(std::make_integer_sequence<int, Max>{});
  }
}

}  // namespace

template <int R>
CKJIT_X2_TARGET void x2_rows(const BlockQ6_K* x0, const BlockQ6_K* x1, const BlockQ8_K* const* y, int64_t n, float* out) {
  const int64_t nb = n / QK_K;
  __m512i pick[8];
  for (int c = 0; c < 8; ++c) {
    const __m128i q0 = _mm_set1_epi16(short(2 * c)), q1 = _mm_set1_epi16(short(2 * c + 1));
    const __m128i q2 = _mm_set1_epi16(short(16 + 2 * c)), q3 = _mm_set1_epi16(short(16 + 2 * c + 1));
    pick[c] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_set_m128i(q1, q0)), _mm256_set_m128i(q3, q2), 1);
  }
  __m512 acc[R];
  for (int j = 0; j < R; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    prefetch_ahead(x0 + i, x1 + i);
    const float w0 = _cvtsh_ss(x0[i].d), w1 = _cvtsh_ss(x1[i].d);
    const uint8_t *ql0 = x0[i].ql, *ql1 = x1[i].ql, *qh0 = x0[i].qh, *qh1 = x1[i].qh;
    const __m512i sc16 = scales_pair(x0[i], x1[i]);
    __m512i T[R];
    for (int j = 0; j < R; ++j) T[j] = _mm512_setzero_si512();
    for (int half = 0; half < 2; ++half, ql0 += 64, ql1 += 64, qh0 += 32, qh1 += 32) {
      __m512i u[4];
      unpack_half(ql0, ql1, qh0, qh1, u);
      for (int c = 0; c < 4; ++c) {
        const __m512i s16 = _mm512_permutexvar_epi16(pick[4 * half + c], sc16);
        for (int j = 0; j < R; ++j) {
          const int8_t* r = y[j][i].qs + 128 * half;
          const __m512i rv = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(r + 32 * c)));
          T[j] = _mm512_add_epi32(T[j], _mm512_madd_epi16(_mm512_maddubs_epi16(u[c], rv), s16));
        }
      }
    }
    for (int j = 0; j < R; ++j) add_block(T[j], y[j][i], sc16, w0, w1, acc[j]);
  }
  for (int j = 0; j < R; ++j) store_pair(acc[j], out + 2 * j);
}

// One activation row: the same code (each row's operations do not depend on the others').
void vec_dot_q6_K_q8_K_x2_avx512(const BlockQ6_K* x0, const BlockQ6_K* x1, const BlockQ8_K* y, int64_t n, float out[2]) {
  x2_rows<1>(x0, x1, &y, n, out);
}

#define CKJIT_X2V_TARGET __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni,f16c,fma")))

// The same sums with the weights unpacked once per block into int16 (6-bit value times its
// sub-block scale, |w| <= 8064) and one vpdpwssd per 32 products per activation row: vpdpwssd's
// int32 lane k holds elements 2k, 2k+1, the AVX2 order's lane L holds 4L..4L+3, so adding lane
// pairs at the end of a block gives the AVX2 order's int32 sums exactly (integer sums are exact;
// no partial sum nears 2^31). The float steps after it are x2_rows's.
template <int R>
CKJIT_X2V_TARGET void x2_rows_vnni(const BlockQ6_K* x0, const BlockQ6_K* x1, const BlockQ8_K* const* y, int64_t n,
                                   float* out) {
  const int64_t nb = n / QK_K;
  const __m512i even = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
  const __m512i odd = _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
  alignas(64) int16_t w16[2][8][32];  // [weight row][32-element group][element]
  __m512 acc[R];
  for (int j = 0; j < R; ++j) acc[j] = _mm512_setzero_ps();
  for (int64_t i = 0; i < nb; ++i) {
    prefetch_ahead(x0 + i, x1 + i);
    const float w0 = _cvtsh_ss(x0[i].d), w1 = _cvtsh_ss(x1[i].d);
    const uint8_t *ql0 = x0[i].ql, *ql1 = x1[i].ql, *qh0 = x0[i].qh, *qh1 = x1[i].qh;
    const __m512i sc16 = scales_pair(x0[i], x1[i]);
    for (int half = 0; half < 2; ++half, ql0 += 64, ql1 += 64, qh0 += 32, qh1 += 32) {
      __m512i u[4];
      unpack_half(ql0, ql1, qh0, qh1, u);
      for (int c = 0; c < 4; ++c) {
        const int g = 4 * half + c;  // elements 32g .. 32g+31: scales 2g (first 16), 2g+1
        const __m512i s0 = _mm512_permutexvar_epi16(
            _mm512_inserti64x4(_mm512_set1_epi16(short(2 * g)), _mm256_set1_epi16(short(2 * g + 1)), 1), sc16);
        const __m512i s1 = _mm512_permutexvar_epi16(
            _mm512_inserti64x4(_mm512_set1_epi16(short(16 + 2 * g)), _mm256_set1_epi16(short(16 + 2 * g + 1)), 1), sc16);
        _mm512_store_si512(w16[0][g], _mm512_mullo_epi16(_mm512_cvtepu8_epi16(_mm512_castsi512_si256(u[c])), s0));
        _mm512_store_si512(w16[1][g], _mm512_mullo_epi16(_mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(u[c], 1)), s1));
      }
    }
    // Groups outer, rows inner: 2R independent vpdpwssd chains.
    __m512i ta[R], tb[R];
#pragma GCC unroll 8
    for (int j = 0; j < R; ++j) ta[j] = tb[j] = _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int g = 0; g < 8; ++g) {
      const __m512i wa = _mm512_load_si512(w16[0][g]), wb = _mm512_load_si512(w16[1][g]);
#pragma GCC unroll 8
      for (int j = 0; j < R; ++j) {
        const __m512i r = _mm512_cvtepi8_epi16(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y[j][i].qs + 32 * g)));
        ta[j] = _mm512_dpwssd_epi32(ta[j], r, wa);
        tb[j] = _mm512_dpwssd_epi32(tb[j], r, wb);
      }
    }
#pragma GCC unroll 8
    for (int j = 0; j < R; ++j)
      add_block(_mm512_add_epi32(_mm512_permutex2var_epi32(ta[j], even, tb[j]), _mm512_permutex2var_epi32(ta[j], odd, tb[j])),
                y[j][i], sc16, w0, w1, acc[j]);
  }
  for (int j = 0; j < R; ++j) store_pair(acc[j], out + 2 * j);
}

void vec_dot_q6_K_q8_K_x2_rows_vnni512(const BlockQ6_K* x0, const BlockQ6_K* x1, const BlockQ8_K* const* y, int rows,
                                       int64_t n, float* out) {
  in_runs_of<8>(rows, y, out, [&](auto r, const BlockQ8_K* const* yr, float* o) { x2_rows_vnni<decltype(r)::value>(x0, x1, yr, n, o); });
}

void vec_dot_q6_K_q8_K_x2_rows_avx512(const BlockQ6_K* x0, const BlockQ6_K* x1, const BlockQ8_K* const* y, int rows,
                                      int64_t n, float* out) {
  in_runs_of<4>(rows, y, out, [&](auto r, const BlockQ8_K* const* yr, float* o) { x2_rows<decltype(r)::value>(x0, x1, yr, n, o); });
}

}  // namespace ckjit::quant

CKJIT_AVX512_INTRINSICS_END
