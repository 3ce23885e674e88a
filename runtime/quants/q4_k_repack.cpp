// Float orders of llama.cpp's repacked Q4_K kernels (§7.2, §8.6), computed from plain blocks. The
// integer partial sums are exact; only where the FMAs fall differs from vec_dot_q4_K_q8_K.
#include <cmath>
#include <cstring>

#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
namespace {

// Per super-block integer sums for the 4 sub-block pairs: S[p] (scaled quant dots) and M[p]
// (scaled activation sums for the min term).
void q4_K_pair_sums(const BlockQ4_K& x, const BlockQ8_K& y, int32_t S[4], int32_t M[4]) {
  uint8_t sc[8], mn[8];
  unpack_k4_scales(x.scales, sc, mn);
  for (int p = 0; p < 4; ++p) {
    S[p] = 0;
    M[p] = 0;
    for (int h = 0; h < 2; ++h) {
      const int s = 2 * p + h;
      int32_t dot = 0;
      for (int l = 0; l < 32; ++l) {
        const uint8_t byte = x.qs[32 * p + l];
        dot += int32_t(h ? (byte >> 4) : (byte & 0x0f)) * y.qs[32 * s + l];
      }
      S[p] += int32_t(sc[s]) * dot;
      M[p] += int32_t(mn[s]) * (int32_t(y.bsums[2 * s]) + y.bsums[2 * s + 1]);
    }
  }
}

}  // namespace

// ggml_gemv_q4_K_8x8_q8_K (AVX2): one FMA per super-block for each of the two sums, subtracted at
// the end. The scales are f16(d)*D rounded first.
float vec_dot_q4_K_q8_K_repack_gemv(const BlockQ4_K* x, const BlockQ8_K* y, int64_t n) {
  float acc = 0.0f, accm = 0.0f;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    int32_t S[4], M[4];
    q4_K_pair_sums(x[i], y[i], S, M);
    const int32_t s = (S[0] + S[1]) + (S[2] + S[3]), m = (M[0] + M[1]) + (M[2] + M[3]);
    acc = std::fma(float(s), f16_to_f32(x[i].d) * y[i].d, acc);
    accm = std::fma(float(m), f16_to_f32(x[i].dmin) * y[i].d, accm);
  }
  return acc - accm;
}

// ggml_gemm_q4_K_8x8_q8_K (AVX2): one FMA per sub-block pair (64 elements) for each sum.
float vec_dot_q4_K_q8_K_repack_gemm(const BlockQ4_K* x, const BlockQ8_K* y, int64_t n) {
  float acc = 0.0f, accm = 0.0f;
  for (int64_t i = 0; i < n / QK_K; ++i) {
    int32_t S[4], M[4];
    q4_K_pair_sums(x[i], y[i], S, M);
    const float d = f16_to_f32(x[i].d) * y[i].d, dmin = f16_to_f32(x[i].dmin) * y[i].d;
    for (int p = 0; p < 4; ++p) {
      acc = std::fma(float(S[p]), d, acc);
      accm = std::fma(float(M[p]), dmin, accm);
    }
  }
  return acc - accm;
}

void quantize_row_q8_K_repack(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float amax = 0.0f;
    for (int j = 0; j < QK_K; ++j) amax = std::fmax(amax, std::fabs(x[j]));
    bool positive_extreme = false;
    for (int j = 0; j < QK_K; ++j) positive_extreme |= x[j] == amax;
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = positive_extreme ? -127.f / amax : 127.f / amax;
    y[i].d = 1 / iscale;
    for (int j = 0; j < QK_K; ++j) y[i].qs[j] = detail::cvt_round_even_sat_i8(x[j] * iscale);
    for (int g = 0; g < QK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * g + l];
      y[i].bsums[g] = int16_t(sum);
    }
  }
}

}  // namespace ckjit::quant
