// Q4_K: 256-element super-blocks of 4-bit quants with 6-bit scales and mins (§4).
#include <cmath>
#include <cstring>

#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
namespace detail {

void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(x[i].d), dmin = f16_to_f32(x[i].dmin);
    uint8_t sc[8], mn[8];
    unpack_k4_scales(x[i].scales, sc, mn);
    for (int e = 0; e < QK_K; ++e) {
      const int c = e / 64, r = e % 64, s = e / 32;
      const uint8_t byte = x[i].qs[32 * c + (r & 31)];
      const int q = r < 32 ? (byte & 0x0f) : (byte >> 4);
      // Not fused: libggml-base (dequantize_row_q4_K) is compiled without FMA.
      *y++ = (d * float(sc[s])) * float(q) - dmin * float(mn[s]);
    }
  }
}

// Shared by Q4_K and Q5_K: per sub-block weights av_x + |x|, make_qkx2_quants, 6-bit scale and min
// codes relative to the largest ones, then the levels re-fit against the stored f16 scales.
// L receives levels 0..nmax per element.
void quantize_k4_super_block(const float* x, int nmax, float rmin, float rdelta, int nstep,
                             uint16_t* d_out, uint16_t* dmin_out, uint8_t scales[12], uint8_t L[QK_K]) {
  float weights[32], mins[8], scales_f[8];
  uint8_t Laux[32];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    float sum_x2 = 0;
    for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
    const float av_x = std::sqrt(sum_x2 / 32);
    for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
    scales_f[j] = make_qkx2_quants(32, nmax, x + 32 * j, weights, L + 32 * j, &mins[j], Laux, rmin,
                                   rdelta, nstep);
    if (scales_f[j] > max_scale) max_scale = scales_f[j];
    if (mins[j] > max_min) max_min = mins[j];
  }
  const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
  const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
  uint8_t sc[8], mn[8];
  for (int j = 0; j < 8; ++j) {
    // llama.cpp stores nearest_int into a uint8_t before clamping to 63: keep that truncation.
    const uint8_t ls = uint8_t(nearest_int(inv_scale * scales_f[j]));
    const uint8_t lm = uint8_t(nearest_int(inv_min * mins[j]));
    sc[j] = ls < 63 ? ls : 63;
    mn[j] = lm < 63 ? lm : 63;
  }
  pack_k4_scales(sc, mn, scales);
  *d_out = f32_to_f16(max_scale / 63.f);
  *dmin_out = f32_to_f16(max_min / 63.f);
  const float d_super = f16_to_f32(*d_out), dmin_super = f16_to_f32(*dmin_out);
  for (int j = 0; j < 8; ++j) {
    const float d = d_super * float(sc[j]);
    if (d == 0) continue;  // levels of a zero-scale sub-block stay as the search left them
    const float dm = dmin_super * float(mn[j]);
    for (int ii = 0; ii < 32; ++ii) {
      const int l = nearest_int((x[32 * j + ii] + dm) / d);
      L[32 * j + ii] = uint8_t(l < 0 ? 0 : (l > nmax ? nmax : l));
    }
  }
}

void quantize_row_q4_K_ref(const float* x, BlockQ4_K* y, int64_t n) {
  uint8_t L[QK_K];
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    quantize_k4_super_block(x, 15, -1.f, 0.1f, 20, &y[i].d, &y[i].dmin, y[i].scales, L);
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        y[i].qs[32 * c + l] = uint8_t(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
  }
}

}  // namespace detail

// AVX2 ggml_vec_dot_q4_K_q8_K (§8.3): per super-block one FMA into each of 8 float lanes (lane L
// holds elements 4L..4L+3 of every 32-element sub-block) and one FMA of the min term into each of
// 4 lanes (sub-block pairs); reduced by hsum_float_8 and a 4-lane tree.
float vec_dot_q4_K_q8_K(const BlockQ4_K* x, const BlockQ8_K* y, int64_t n) {
  float acc[8] = {}, accm[4] = {};
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = y[i].d * f16_to_f32(x[i].d);
    const float dm = -y[i].d * f16_to_f32(x[i].dmin);
    uint8_t sc[8], mn[8];
    unpack_k4_scales(x[i].scales, sc, mn);
    int32_t B[8];
    for (int s = 0; s < 8; ++s) B[s] = int32_t(y[i].bsums[2 * s]) + y[i].bsums[2 * s + 1];
    for (int k = 0; k < 4; ++k) {
      const int32_t P = int32_t(mn[2 * k]) * B[2 * k] + int32_t(mn[2 * k + 1]) * B[2 * k + 1];
      accm[k] = std::fma(dm, float(P), accm[k]);
    }
    for (int lane = 0; lane < 8; ++lane) {
      int32_t S = 0;
      for (int s = 0; s < 8; ++s) {
        const uint8_t* qs = x[i].qs + 32 * (s / 2);
        int32_t dot = 0;
        for (int t = 0; t < 4; ++t) {
          const int e = 4 * lane + t;
          const int q = (s & 1) ? (qs[e] >> 4) : (qs[e] & 0x0f);
          dot += q * int32_t(y[i].qs[32 * s + e]);
        }
        S += int32_t(sc[s]) * dot;
      }
      acc[lane] = std::fma(d, float(S), acc[lane]);
    }
  }
  return detail::hsum_float_8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
}

}  // namespace ckjit::quant
