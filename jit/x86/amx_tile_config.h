#pragma once
// The AMX tile configuration (ldtilecfg's 64-byte operand) of the AMX matmul kernels.
#include <array>
#include <cstdint>

#include "jit/kernel_spec.h"

namespace ckjit::jit {

struct AmxTileConfig {
  // Tiles 0..streams-1: int32 accumulators C (rows x 64 bytes); tile 4: activations A
  // (rows x K bytes, K = 32 elements: a Q4_K/Q5_K sub-block or a Q8_0 block; 16 for a Q6_K
  // sub-block); tiles 6..6+streams-1: weights B (K/4 rows of 4-quant groups x 64 bytes = 16 columns).
  std::array<uint8_t, 64> bytes{};
  int streams = 0;
  static constexpr int kATile = 4, kBTile0 = 6;
  // Sets the row count of the A and C tiles (1..16): the kernel does this at run time for row tails.
  void set_rows(int rows);
  uint16_t colsb(int tile) const { return uint16_t(bytes[size_t(16 + 2 * tile)] | (bytes[size_t(17 + 2 * tile)] << 8)); }
  uint8_t rows(int tile) const { return bytes[size_t(48 + tile)]; }
};

// Config for an AMX spec (rows = 16). Throws ckjit::Error when the spec needs more tiles than
// AMX has.
AmxTileConfig amx_tile_config(const KernelSpec& spec);

}  // namespace ckjit::jit
