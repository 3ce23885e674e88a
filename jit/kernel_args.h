#pragma once
// The runtime arguments of a generated matmul kernel. A call covers rows [0, m) of x and columns
// [0, n) starting at the panel `w` points to; callers (a thread pool, a planner) split work into
// tiles by offsetting the pointers (see run_tile in kernels.h). Field offsets are read by the
// emitted code: do not reorder.
#include <cstddef>
#include <cstdint>

namespace ckjit::jit {

struct GemmArgs {
  const uint8_t* w = nullptr;   // first weight panel of the tile (gate for SwiGLU)
  const uint8_t* w2 = nullptr;  // SwiGLU: the up-projection panel with the same index
  const void* x = nullptr;      // first activation row (Q8_K or Q8_0 blocks)
  int64_t ldx = 0;              // bytes between activation rows
  float* y = nullptr;           // output element (row 0, column 0 of the tile)
  int64_t ldy = 0;              // bytes between output rows
  const float* r = nullptr;     // residual (ep=residual), same tile position as y
  int64_t ldr = 0;              // bytes between residual rows
  int64_t m = 0;                // rows in the tile
  int64_t n = 0;                // columns in the tile; columns past n are never written
};
static_assert(offsetof(GemmArgs, w) == 0 && offsetof(GemmArgs, w2) == 8 && offsetof(GemmArgs, x) == 16 &&
              offsetof(GemmArgs, ldx) == 24 && offsetof(GemmArgs, y) == 32 && offsetof(GemmArgs, ldy) == 40 &&
              offsetof(GemmArgs, r) == 48 && offsetof(GemmArgs, ldr) == 56 && offsetof(GemmArgs, m) == 64 &&
              offsetof(GemmArgs, n) == 72);

using GemmFn = void (*)(const GemmArgs*);

// Arguments of a generated activation quantizer: `rows` rows of spec.k floats to Q8_K (or Q8_0)
// blocks.
struct QuantizeArgs {
  const float* x = nullptr;
  void* y = nullptr;
  int64_t rows = 0;
  int64_t ldx = 0;  // bytes between source rows
  int64_t ldy = 0;  // bytes between destination rows
};
static_assert(offsetof(QuantizeArgs, x) == 0 && offsetof(QuantizeArgs, y) == 8 && offsetof(QuantizeArgs, rows) == 16 &&
              offsetof(QuantizeArgs, ldx) == 24 && offsetof(QuantizeArgs, ldy) == 32);

using QuantizeFn = void (*)(const QuantizeArgs*);

}  // namespace ckjit::jit
