// Q8_0: blocks of 32 int8 with one f16 scale (§3). Dequantizer, the two activation/weight
// quantizers llama.cpp has (scalar reference, x86 AVX2) and the AVX2 q8_0·q8_0 dot product (§8.7).
#include <cmath>

#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
namespace detail {

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK8_0; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < QK8_0; ++j) y[i * QK8_0 + j] = float(x[i].qs[j]) * d;
  }
}

namespace {

// The float -> int8_t store of llama.cpp's C code as GCC compiles it on x86: truncate to int32
// (cvttss2si: NaN and out-of-range give INT32_MIN) and keep the low byte. Only reachable for
// blocks whose amax is so small that 1/d overflows to infinity.
int8_t store_int8_like_x86(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return 0;
  return int8_t(uint8_t(uint32_t(int32_t(v))));
}

}  // namespace

// quantize_row_q8_0_ref: d = amax/127, id = 1/d, q = roundf (half away from zero).
void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t i = 0; i < n / QK8_0; ++i, x += QK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // llama.cpp's MAX(amax, |v|): a NaN |v| is taken
    }
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16(d);
    for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = store_int8_like_x86(std::roundf(x[j] * id));
  }
}

}  // namespace detail

// x86 quantize_row_q8_0 (AVX2 branch of ggml-cpu/arch/x86/quants.c): id = 127/amax (not 1/d) and
// round half to even.
void quantize_row_q8_0_x86(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t i = 0; i < n / QK8_0; ++i, x += QK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < QK8_0; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    y[i].d = f32_to_f16(d);
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < QK8_0; ++j) y[i].qs[j] = detail::cvt_round_even_sat_i8(x[j] * id);
  }
}

float vec_dot_q8_0_q8_0(const BlockQ8_0* x, const BlockQ8_0* y, int64_t n) {
  float acc[8] = {};
  for (int64_t i = 0; i < n / QK8_0; ++i) {
    const float d = f16_to_f32(x[i].d) * f16_to_f32(y[i].d);
    for (int lane = 0; lane < 8; ++lane) {
      int32_t s = 0;
      for (int t = 0; t < 4; ++t) s += int32_t(x[i].qs[4 * lane + t]) * int32_t(y[i].qs[4 * lane + t]);
      acc[lane] = std::fma(d, float(s), acc[lane]);
    }
  }
  return detail::hsum_float_8(acc);
}

}  // namespace ckjit::quant
