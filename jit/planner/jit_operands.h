#pragma once
// Random but valid operands of one op in the JIT kernels' layouts: weights of the op's type
// (every bit pattern of the quant blocks is a valid encoding; scales are kept small and positive),
// repacked into column panels, and f32 activations quantized by the JIT quantizer (Q8_K for
// K-quants, Q8_0 for Q8_0). Used by the tuner's JIT runner and its tests; building is not timed.
#include <cstdint>
#include <optional>
#include <vector>

#include "jit/kernel_spec.h"
#include "jit/kernels.h"
#include "jit/packed_weights.h"
#include "runtime/op_shape.h"

namespace ckjit::planner {

struct JitOperands {
  OpShape shape;
  jit::IsaPath isa = jit::IsaPath::Avx512;
  jit::PackedWeights w;                    // weights (gate for gate_up_swiglu)
  std::optional<jit::PackedWeights> w2;    // gate_up_swiglu: up weights
  std::vector<uint8_t> x;                  // quantized activation rows, ldx bytes apart
  int64_t ldx = 0;
  std::vector<float> y;                    // M x N output

  // Throws ckjit::Error for weight types without JIT kernels and shapes validate() rejects.
  static JitOperands make(const OpShape& s, jit::IsaPath isa, uint32_t seed, int threads);

  jit::MatmulOperands operands();
};

// Whether the JIT kernels cover this weight type (a row of jit/weight_kernels.h).
bool jit_supports(TensorType wtype);

}  // namespace ckjit::planner
