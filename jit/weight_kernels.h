#pragma once
// One row per weight type the JIT matmuls take (as ggml's type_traits_cpu, or oneDNN's
// implementation lists): its packed layout and repack and the scalar twin's dot product, the parts
// every architecture shares. Adding a weight type is one row here plus its kernels and a row in
// each generator's table of emitters (x86: jit/x86/emit.cpp, with the same static_assert); the
// scalar twins, Linear, the planner and the cost model read this table.
#include <cstdint>
#include <memory>
#include <string>

#include "jit/kernel_spec.h"
#include "jit/packed_weights.h"
#include "jit/weight_types.h"

namespace ckjit::jit {

struct WeightKernels {
  TensorType wtype;
  TensorType atype;       // the activation blocks its kernels read (Q8_K or Q8_0)
  int64_t block_elems;    // elements per (super-)block, the unit of K
  // Bytes of one packed super-block of a panel of `panel` rows (packed_weights.h).
  int64_t (*panel_block_bytes)(int panel);
  // GGUF rows (n rows of k elements) into panels of `panel` rows.
  PackedWeights (*repack)(const void* blocks, int64_t n, int64_t k, int panel, int threads);
  // The scalar twin: row l of a panel of P rows times one activation row over nb blocks.
  float (*twin_dot)(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb);
};

// The row of weight type `w`, or nullptr when no JIT kernel multiplies it.
const WeightKernels* weight_kernels(TensorType w);

}  // namespace ckjit::jit
