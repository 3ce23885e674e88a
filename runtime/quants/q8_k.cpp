// Q8_K: the activation format of every K-quant dot product (§7): 256 int8 with a float scale and
// 16 exact int16 group sums.
#include <cmath>
#include <cstring>

#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
namespace detail {

void dequantize_row_q8_K(const BlockQ8_K* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i)
    for (int j = 0; j < QK_K; ++j) y[i * QK_K + j] = x[i].d * float(x[i].qs[j]);
}

}  // namespace detail

// quantize_row_q8_K_ref, which x86 llama.cpp calls directly (§7.1). The first element of largest
// magnitude maps to -127 and d carries the sign. One deliberate difference: for an all-zero block
// llama.cpp leaves bsums untouched (uninitialized); here they are written as 0.
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t i = 0; i < n / QK_K; ++i, x += QK_K) {
    float max = 0.0f, amax = 0.0f;
    for (int j = 0; j < QK_K; ++j) {
      const float ax = std::fabs(x[j]);
      if (ax > amax) { amax = ax; max = x[j]; }
    }
    if (amax == 0.0f) {
      std::memset(&y[i], 0, sizeof y[i]);
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < QK_K; ++j) {
      const int v = detail::nearest_int(iscale * x[j]);
      y[i].qs[j] = int8_t(v < 127 ? v : 127);
    }
    for (int g = 0; g < QK_K / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += y[i].qs[16 * g + l];
      y[i].bsums[g] = int16_t(sum);
    }
    y[i].d = 1.0f / iscale;
  }
}

}  // namespace ckjit::quant
