#pragma once
// Helpers shared by the quant modules (not part of the runtime/jit contract).
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/quants/quants.h"

namespace ckjit::quant::detail {

// llama.cpp's nearest_int (ggml-quants.c): add 1.5*2^23 and read the low mantissa bits, i.e. round
// half to even for |f| <= 4194303. Reproduced bit for bit, including what it returns outside that
// range (llama.cpp only asserts in debug builds), so quantizers stay byte-identical on any input.
inline int nearest_int(float f) {
  const float v = f + 12582912.f;
  int32_t i;
  std::memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

// What x86 SIMD quantizers do to a scaled value: _mm256_round_ps/_mm256_cvtps_epi32 (round half to
// even; NaN, infinities and out-of-range values become INT32_MIN) followed by the saturating packs
// to int8 (so those become -128).
inline int8_t cvt_round_even_sat_i8(float v) {
  if (!(v > -2147483648.0f && v < 2147483648.0f)) return -128;
  const float r = std::nearbyint(v);  // default rounding mode: half to even
  if (r > 127.0f) return 127;
  if (r < -128.0f) return -128;
  return int8_t(r);
}

inline uint32_t float_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_float(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// Horizontal sum of 8 float lanes in the order of llama.cpp's hsum_float_8 (x86):
// ((x0+x4) + (x2+x6)) + ((x1+x5) + (x3+x7)).
inline float hsum_float_8(const float a[8]) {
  const float s0 = a[0] + a[4], s1 = a[1] + a[5], s2 = a[2] + a[6], s3 = a[3] + a[7];
  return (s0 + s2) + (s1 + s3);
}

// Packs the 6-bit scales/mins of Q4_K/Q5_K into 12 bytes (inverse of unpack_k4_scales, §4.2).
void pack_k4_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t packed[12]);

// llama.cpp's make_qkx2_quants: search (scale, min) for an asymmetric nmax-level quantization of n
// weighted values. Returns the scale; *neg_min receives -min (>= 0); L the levels 0..nmax.
float make_qkx2_quants(int n, int nmax, const float* x, const float* weights, uint8_t* L,
                       float* neg_min, uint8_t* Laux, float rmin, float rdelta, int nstep);

// llama.cpp's make_qx_quants with rmse_type 1 and no importance weights (weights x^2): symmetric
// quantization to levels -nmax..nmax-1, stored in L as l + nmax. Returns the (signed) scale.
float make_qx_quants_rmse1(int n, int nmax, const float* x, int8_t* L);

// One Q4_K/Q5_K super-block: sub-block search (make_qkx2_quants with the given parameters), 6-bit
// scale/min codes, f16 super-scales, then levels 0..nmax re-fit against the stored scales.
void quantize_k4_super_block(const float* x, int nmax, float rmin, float rdelta, int nstep,
                             uint16_t* d, uint16_t* dmin, uint8_t scales[12], uint8_t L[QK_K]);

// The K-quant reference quantizers (scalar; what ggml_quantize_chunk runs without an imatrix).
void quantize_row_q4_K_ref(const float* x, BlockQ4_K* y, int64_t n);
void quantize_row_q5_K_ref(const float* x, BlockQ5_K* y, int64_t n);
void quantize_row_q6_K_ref(const float* x, BlockQ6_K* y, int64_t n);
void quantize_row_q8_0_ref(const float* x, BlockQ8_0* y, int64_t n);

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q4_K(const BlockQ4_K* x, float* y, int64_t n);
void dequantize_row_q5_K(const BlockQ5_K* x, float* y, int64_t n);
void dequantize_row_q6_K(const BlockQ6_K* x, float* y, int64_t n);
void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n);

}  // namespace ckjit::quant::detail
