// Q6_K: 16 sub-blocks of 16 signed 6-bit quants with int8 scales and one f16 super-scale (§6).
#include <cmath>
#include <cstring>

#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
namespace detail {
namespace {

// Unsigned 6-bit level (0..63) of element e (§6 table).
inline int q6_level(const BlockQ6_K& b, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t ql = b.ql[64 * h + 32 * (k & 1) + l];
  const int low = k < 2 ? (ql & 15) : (ql >> 4);
  const int high = (b.qh[32 * h + l] >> (2 * k)) & 3;
  return low | (high << 4);
}

}  // namespace

void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int e = 0; e < QK_K; ++e) *y++ = (d * float(x[i].scales[e / 16])) * float(q6_level(x[i], e) - 32);
  }
}

void quantize_row_q6_K_ref(const float* x, BlockQ6_K* y, int64_t n) {
  constexpr float kGroupMaxEps = 1e-15f;
  int8_t L[QK_K];
  float scales[QK_K / 16];
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float max_scale = 0, max_abs_scale = 0;
    for (int ib = 0; ib < QK_K / 16; ++ib) {
      scales[ib] = make_qx_quants_rmse1(16, 32, x + 16 * ib, L + 16 * ib);
      const float abs_scale = std::fabs(scales[ib]);
      if (abs_scale > max_abs_scale) { max_abs_scale = abs_scale; max_scale = scales[ib]; }
    }
    if (max_abs_scale < kGroupMaxEps) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -128.f / max_scale;
    y[i].d = f32_to_f16(1 / iscale);
    for (int ib = 0; ib < QK_K / 16; ++ib) {
      const int v = nearest_int(iscale * scales[ib]);
      y[i].scales[ib] = int8_t(v < 127 ? v : 127);  // wraps like llama.cpp's int -> int8 store
    }
    const float d_super = f16_to_f32(y[i].d);
    for (int j = 0; j < QK_K / 16; ++j) {
      const float d = d_super * float(y[i].scales[j]);
      if (d == 0) continue;  // keep the search's levels, as llama.cpp does
      for (int ii = 0; ii < 16; ++ii) {
        int l = nearest_int(x[16 * j + ii] / d);
        l = l < -32 ? -32 : (l > 31 ? 31 : l);
        L[16 * j + ii] = int8_t(l + 32);
      }
    }
    for (int h = 0; h < 2; ++h) {
      const int8_t* Lh = L + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int q1 = Lh[l], q2 = Lh[l + 32], q3 = Lh[l + 64], q4 = Lh[l + 96];
        y[i].ql[64 * h + l] = uint8_t((q1 & 15) | ((q3 & 15) << 4));
        y[i].ql[64 * h + 32 + l] = uint8_t((q2 & 15) | ((q4 & 15) << 4));
        y[i].qh[32 * h + l] = uint8_t((q1 >> 4) | ((q2 >> 4) << 2) | ((q3 >> 4) << 4) | ((q4 >> 4) << 6));
      }
    }
  }
}

}  // namespace detail

// AVX2 ggml_vec_dot_q6_K_q8_K (§8.4): lane L sums the unsigned-level products of elements 4L..4L+3
// of each 32-element chunk (scale 2c for lanes 0..3, 2c+1 for lanes 4..7) and subtracts
// 32 * (bsums[2L]*sc[2L] + bsums[2L+1]*sc[2L+1]); one FMA per lane per super-block.
float vec_dot_q6_K_q8_K(const BlockQ6_K* x, const BlockQ8_K* y, int64_t n) {
  float acc[8] = {};
  for (int64_t i = 0; i < n / QK_K; ++i) {
    const float d = y[i].d * f16_to_f32(x[i].d);
    const int8_t* sc = x[i].scales;
    for (int lane = 0; lane < 8; ++lane) {
      int32_t T = 0;
      for (int c = 0; c < 8; ++c) {
        int32_t dot = 0;
        for (int t = 0; t < 4; ++t) {
          const int e = 32 * c + 4 * lane + t;
          dot += detail::q6_level(x[i], e) * int32_t(y[i].qs[e]);
        }
        T += int32_t(sc[2 * c + (lane >= 4)]) * dot;
      }
      const int32_t C = 32 * (int32_t(y[i].bsums[2 * lane]) * sc[2 * lane] +
                              int32_t(y[i].bsums[2 * lane + 1]) * sc[2 * lane + 1]);
      acc[lane] = std::fma(d, float(T - C), acc[lane]);
    }
  }
  return detail::hsum_float_8(acc);
}

}  // namespace ckjit::quant
