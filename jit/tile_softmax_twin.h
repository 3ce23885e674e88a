#pragma once
// The portable twin of tile_softmax.h's softmax_step, in its float order lane by lane: exp8's
// polynomial per element (the same clamps, round-to-even, fused multiply-adds), the running max and
// sum in 8 lanes taken j by j, and hmax8 / hsum8's pairing of the lanes. For the CPUs without the
// x86 copy (AArch64, issue 50) and to check that copy bit for bit (test_tiled_attention.cpp).
// Needs -ffp-contract=off (the project's flag): every * and + below rounds on its own, as there.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "jit/tile_softmax_poly.h"

namespace ckjit::jit::twin {

// exp8 of one lane. max_ps / min_ps keep their operand order's NaN rule: (a > b) ? a : b.
inline float exp1(float x) {
  x = x > exp_poly::kMin ? x : exp_poly::kMin;
  x = x < exp_poly::kMax ? x : exp_poly::kMax;
  const float fx = std::nearbyint(x * exp_poly::kLog2e);  // round to nearest even, as _mm256_round_ps
  x = std::fma(-fx, exp_poly::kLn2Hi, x);
  x = std::fma(-fx, exp_poly::kLn2Lo, x);
  float y = exp_poly::kP[0];
  for (int i = 1; i < 6; ++i) y = std::fma(y, x, exp_poly::kP[i]);
  y = std::fma(y, x * x, x + 1.0f);
  const int32_t e = (int32_t(fx) + 127) * (int32_t(1) << 23);  // fx in [-127, 127]: 2^fx's bits
  float scale;
  std::memcpy(&scale, &e, 4);
  return y * scale;
}

// hmax8: the halves (lane i against i + 4), then lanes 0, 1 against 2, 3, then 0 against 1.
inline float hmax8(const float v[8]) {
  auto mx = [](float a, float b) { return a > b ? a : b; };
  float s[4];
  for (int i = 0; i < 4; ++i) s[i] = mx(v[i], v[i + 4]);
  return mx(mx(s[0], s[2]), mx(s[1], s[3]));
}
// hsum8: ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
inline float hsum8(const float v[8]) {
  float s[4];
  for (int i = 0; i < 4; ++i) s[i] = v[i] + v[i + 4];
  return (s[0] + s[2]) + (s[1] + s[3]);
}

// softmax_step's contract (tile_softmax.h): nk a multiple of 8.
inline float softmax_step(float* s, int64_t nk, int64_t valid, float scale, float& m, float& l) {
  const float ninf = -std::numeric_limits<float>::infinity();
  for (int64_t j = valid; j < nk; ++j) s[j] = ninf;
  float mx[8];
  for (int i = 0; i < 8; ++i) mx[i] = s[i];
  for (int64_t j = 8; j < nk; j += 8)
    for (int i = 0; i < 8; ++i) mx[i] = mx[i] > s[j + i] ? mx[i] : s[j + i];
  const float m_new = std::max(m, hmax8(mx) * scale);
  const float alpha = m == ninf ? 0.0f : exp1(m - m_new);
  float sum[8] = {};
  for (int64_t j = 0; j < nk; j += 8)
    for (int i = 0; i < 8; ++i) {
      const float p = exp1(std::fma(s[j + i], scale, -m_new));  // fmsub: s * scale - m, one rounding
      s[j + i] = p;
      sum[i] = sum[i] + p;
    }
  l = l * alpha + hsum8(sum);
  m = m_new;
  return alpha;
}

}  // namespace ckjit::jit::twin
