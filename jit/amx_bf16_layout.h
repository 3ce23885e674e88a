#pragma once
// The packed layout of a BF16 weight matrix for the AMX op=dense kernel (jit/x86/amx_bf16_emitter.cpp).
// Columns go in pairs of two 16-column panels (one 32-column output block); per pair, K in steps of
// 32; per step two B tiles of 1 KB, panel 0 then panel 1. Row j (0..15) of a B tile holds, for each
// of its 16 columns c, the bf16 pair (w[c][32s + 2j], w[c][32s + 2j + 1]): AMX's VNNI order. Columns
// past n are zero.
#include <cstdint>

namespace ckjit::jit {

struct AmxBf16Layout {
  int64_t n = 0, k = 0;  // k: a multiple of 32
  static constexpr int64_t kPairCols = 32, kStepK = 32, kTileBytes = 1024, kStepBytes = 2 * kTileBytes;
  int64_t pairs() const { return (n + kPairCols - 1) / kPairCols; }
  int64_t steps() const { return k / kStepK; }
  int64_t pair_bytes() const { return steps() * kStepBytes; }
  int64_t bytes() const { return pairs() * pair_bytes(); }
  // Byte offset of w[col][kk].
  int64_t offset(int64_t col, int64_t kk) const {
    const int64_t panel = (col % kPairCols) / 16, c = col % 16, s = kk / kStepK, j = (kk % kStepK) / 2, e = kk % 2;
    return (col / kPairCols) * pair_bytes() + s * kStepBytes + panel * kTileBytes + j * 64 + c * 4 + e * 2;
  }
};

}  // namespace ckjit::jit
