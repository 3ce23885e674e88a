#pragma once
// The copies of vision_ops' hand-written kernels, with the same signatures and results: AVX2 + F16C
// (vision_ops_avx2.cpp) and the portable C++ twins (vision_ops.cpp). The op takes one at
// construction, the one jit::hand_isa chooses for the load's Isa (HandOp::f16_rows).
#include <cstdint>

namespace ckjit::vision::kernels {

// x[i] := gelu(x[i]) through the f16 table (GeluTable): 0 at or below -10, x at or above 10.
void gelu_rows_avx2(const float* table, float* x, int64_t n);
void gelu_rows_portable(const float* table, float* x, int64_t n);

}  // namespace ckjit::vision::kernels
