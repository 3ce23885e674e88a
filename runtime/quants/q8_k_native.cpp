#include "runtime/quants/q8_k_native.h"

#include <algorithm>

#include "runtime/quants/q8_k_native_block.h"

namespace ckjit::quant {

using namespace q8k_native;

void quantize_row_q8_K_fma_scalar(const float* x, BlockQ8_K* y, int64_t n) {
  const int64_t nb = n / QK_K;
  for (int64_t i = 0; i < nb; ++i, x += QK_K) {
    BlockQ8_K& b = y[i];
    float iscale;
    if (!start_block(x, b, iscale)) continue;
    for (int j = 0; j < QK_K; ++j) b.qs[j] = int8_t(std::min(127, nearest_int_fma(iscale, x[j])));
    finish_block(b, iscale);
  }
}

}  // namespace ckjit::quant
