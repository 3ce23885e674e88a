#pragma once
// Calling generated matmul kernels on a tile of a packed weight matrix.
#include <cstdint>

#include "jit/code_cache.h"
#include "jit/kernel_args.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {

// Where a tile lives: rows [m_begin, m_end) of x/y, columns [n_begin, n_end) of y (weight rows).
// n_begin must be a multiple of the weight panel; n_end <= w.n.
struct Tile { int64_t m_begin, m_end, n_begin, n_end; };

struct MatmulOperands {
  const PackedWeights* w = nullptr;   // weights (gate for SwiGLU)
  const PackedWeights* w2 = nullptr;  // SwiGLU: up weights (same shape as w)
  const void* x = nullptr;            // activation rows (Q8_K for K-quants, Q8_0 for Q8_0)
  int64_t ldx = 0;                    // bytes between activation rows
  float* y = nullptr;
  int64_t ldy = 0;                    // bytes between output rows
  const float* r = nullptr;           // residual (ep=residual)
  int64_t ldr = 0;
};

// Checks shapes against the spec and builds the kernel arguments of one tile.
// Throws ckjit::Error when the operands do not fit the spec.
GemmArgs tile_args(const KernelSpec& spec, const MatmulOperands& op, const Tile& t);

// Runs the generated kernel (or, with use_reference, its scalar twin) on one tile.
void run_tile(const JitKernel& k, const MatmulOperands& op, const Tile& t);
void run_tile_reference(const KernelSpec& spec, const MatmulOperands& op, const Tile& t);

}  // namespace ckjit::jit
