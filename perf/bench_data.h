#pragma once
// Random operands for the kernel benchmarks: Q4_K blocks with small positive f16 scales and
// random scale/quant bytes (any pattern is a valid block), so kernels see no special values.
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "runtime/quants/quants.h"

namespace ckjit::bench {

inline std::vector<quant::BlockQ4_K> random_q4k_blocks(std::size_t count, std::mt19937_64& rng) {
  std::vector<quant::BlockQ4_K> v(count);
  for (auto& b : v) {
    uint64_t r = rng();
    b.d = quant::f32_to_f16(0.001f + float(r & 1023) * 1e-5f);
    b.dmin = quant::f32_to_f16(0.001f + float((r >> 10) & 1023) * 1e-5f);
    for (int i = 0; i < 12; i += 4) { uint32_t w = uint32_t(rng()); std::memcpy(b.scales + i, &w, 4); }
    for (int i = 0; i < 128; i += 8) { uint64_t w = rng(); std::memcpy(b.qs + i, &w, 8); }
  }
  return v;
}

}  // namespace ckjit::bench
