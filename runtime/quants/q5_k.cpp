// Q5_K: Q4_K's layout plus one high bit per element in qh (§5).
#include <cmath>

#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
namespace detail {

void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(x[i].d), dmin = f16_to_f32(x[i].dmin);
    uint8_t sc[8], mn[8];
    unpack_k4_scales(x[i].scales, sc, mn);
    for (int e = 0; e < QK_K; ++e) {
      const int c = e / 64, r = e % 64, s = e / 32, l = e % 32;
      const uint8_t byte = x[i].qs[32 * c + l];
      const int low = r < 32 ? (byte & 0x0f) : (byte >> 4);
      const int q = low + (((x[i].qh[l] >> s) & 1) << 4);
      *y++ = (d * float(sc[s])) * float(q) - dmin * float(mn[s]);
    }
  }
}

void quantize_row_q5_K_ref(const float* x, BlockQ5_K* y, int64_t n) {
  uint8_t L[QK_K];
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    quantize_k4_super_block(x, 31, -0.5f, 0.1f, 15, &y[i].d, &y[i].dmin, y[i].scales, L);
    for (int l = 0; l < 32; ++l) y[i].qh[l] = 0;
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        const int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        y[i].qh[l] |= uint8_t(((lo >> 4) << (2 * c)) | ((hi >> 4) << (2 * c + 1)));
        y[i].qs[32 * c + l] = uint8_t((lo & 15) | ((hi & 15) << 4));
      }
    }
  }
}

}  // namespace detail

// AVX2 ggml_vec_dot_q5_K_q8_K (§8.5): the same 8-lane integer structure as Q4_K; the min term is one
// scalar per super-block accumulated with an FMA (GCC contracts `summs += dmin * M` under -mfma).
float vec_dot_q5_K_q8_K(const BlockQ5_K* x, const BlockQ8_K* y, int64_t n) {
  float acc[8] = {};
  float summs = 0.0f;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = y[i].d * f16_to_f32(x[i].d);
    const float dm = -y[i].d * f16_to_f32(x[i].dmin);
    uint8_t sc[8], mn[8];
    unpack_k4_scales(x[i].scales, sc, mn);
    int32_t M = 0;
    for (int s = 0; s < 8; ++s) M += int32_t(mn[s]) * (int32_t(y[i].bsums[2 * s]) + y[i].bsums[2 * s + 1]);
    summs = std::fma(dm, float(M), summs);
    for (int lane = 0; lane < 8; ++lane) {
      int32_t S = 0;
      for (int s = 0; s < 8; ++s) {
        const uint8_t* qs = x[i].qs + 32 * (s / 2);
        int32_t dot = 0;
        for (int t = 0; t < 4; ++t) {
          const int e = 4 * lane + t;
          const int low = (s & 1) ? (qs[e] >> 4) : (qs[e] & 0x0f);
          const int q = low + (((x[i].qh[e] >> s) & 1) << 4);
          dot += q * int32_t(y[i].qs[32 * s + e]);
        }
        S += int32_t(sc[s]) * dot;
      }
      acc[lane] = std::fma(d, float(S), acc[lane]);
    }
  }
  return detail::hsum_float_8(acc) + summs;
}

}  // namespace ckjit::quant
