#include "runtime/quants/f16_rows.h"

#include <cstring>

#include "runtime/quants/quants.h"

namespace ckjit::quant {

uint16_t f32_to_f16_f16c(float x) {
  uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  if ((u & 0x7fffffff) > 0x7f800000) return uint16_t(((u >> 16) & 0x8000) | 0x7e00 | ((u >> 13) & 0x3ff));
  return f32_to_f16(x);
}

void f32_to_f16_rows(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = f32_to_f16_f16c(x[i]);
}

void round_f16_rows(const float* x, float* y, int64_t n) {
  const int64_t whole = n / 8 * 8;
  for (int64_t i = 0; i < whole; ++i) y[i] = f16_to_f32(f32_to_f16_f16c(x[i]));
  for (int64_t i = whole; i < n; ++i) y[i] = f16_to_f32(f32_to_f16(x[i]));
}

}  // namespace ckjit::quant
