#pragma once
// The shared steps of the Q8_K quantizers of q8_k_native.h (scalar in q8_k_native.cpp, AVX2 and
// AVX-512 in q8_k_native_x86.cpp): the FMA rounding, the block's max, its scale and its sums.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "runtime/quants/quants.h"

namespace ckjit::quant::q8k_native {

constexpr float kMagic = 12582912.0f;  // 1.5 * 2^23

inline int nearest_int_fma(float a, float b) {
  const float v = std::fma(a, b, kMagic);
  int32_t i;
  std::memcpy(&i, &v, sizeof i);
  return (i & 0x007fffff) - 0x00400000;
}

// Largest |x| with its signed value, first occurrence on ties (strict '>').
inline float block_max(const float* x, float& amax) {
  float mx = 0.0f;
  amax = 0.0f;
  for (int j = 0; j < QK_K; ++j) {
    const float ax = std::fabs(x[j]);
    if (ax > amax) amax = ax, mx = x[j];
  }
  return mx;
}

// From the block's max (signed value mx, magnitude amax): sets iscale = -127/mx and returns true,
// or writes an all-zero block as zeros and returns false.
inline bool start_block(float mx, float amax, BlockQ8_K& b, float& iscale) {
  if (amax == 0.0f) {
    b.d = 0.0f;
    std::memset(b.qs, 0, sizeof b.qs);
    std::memset(b.bsums, 0, sizeof b.bsums);
    return false;
  }
  iscale = -127.0f / mx;
  return true;
}

inline bool start_block(const float* x, BlockQ8_K& b, float& iscale) {
  float amax;
  const float mx = block_max(x, amax);
  return start_block(mx, amax, b, iscale);
}

inline void finish_block(BlockQ8_K& b, float iscale) {
  for (int g = 0; g < QK_K / 16; ++g) {
    int s = 0;
    for (int i = 0; i < 16; ++i) s += b.qs[16 * g + i];
    b.bsums[g] = int16_t(s);
  }
  b.d = 1.0f / iscale;
}


}  // namespace ckjit::quant::q8k_native
