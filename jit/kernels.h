#pragma once
// Calling generated matmul kernels on a tile of a packed weight matrix.
#include <cstdint>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
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

// Fused Gate-Up SwiGLU whose result goes straight into the Q8_K input of the down projection:
// the SwiGLU kernel writes the tile into a small f32 scratch (L2-sized row chunks) and the Q8_K
// quantizer (spec k = 256) turns each 256-column block into one BlockQ8_K of `dst` (row stride
// ldd bytes, block index = column / 256). The tile's columns must start at a multiple of 256 and
// end at one or at N; N must be a multiple of 256. Same bytes as running SwiGLU to f32 and then
// quant::quantize_row_q8_K on every row.
void run_swiglu_to_q8k_tile(const JitKernel& swiglu, const JitKernel& quantize256, const MatmulOperands& op,
                            void* dst, int64_t ldd, const Tile& t);

// The op=dense micro-tile kernel on `isa` (avx2: 8-column panels; avx512: 16) for mr rows x nr
// panels over kc elements of a K of k (the panel stride), from the code cache; Error if it cannot
// run here. Both widths give the same bits (one FMA chain per output).
GemmFn dense_kernel(IsaPath isa, TensorType wtype, int mr, int nr, int64_t kc, int64_t k, bool accumulate, Epilogue ep);
// The widest op=dense path that runs on `isa` (avx512 where it runs, else avx2; Error below AVX2).
IsaPath widest_dense_path(const topo::Isa& isa);
// The register block of an op=dense path: mr rows x nr panels (avx2: 4 x 3 of 16 ymm; avx512:
// 8 x 3 of 32 zmm), the largest nr that dense_block_problem accepts for that mr. (On Sapphire
// Rapids 8 x 3 multiplies F16 panels from L2 ~9% faster than 6 x 4: fewer conversions per FMA.)
struct DenseBlock {
  int mr, nr;
};
DenseBlock dense_block(IsaPath isa);
// Its spec (for the scalar twin, jit::reference_dense).
KernelSpec dense_spec(IsaPath isa, TensorType wtype, int mr, int nr, int64_t kc, int64_t k, bool accumulate, Epilogue ep);

}  // namespace ckjit::jit
