// The AVX2 + FMA copy of Rope's rotation (rope_rotate.h): FMA enabled so that std::fma is the
// instruction, not a libm call per element. Chosen by jit/hand_kernels.cpp (HandOp::rope_rows).
#include "graph/rope_rotate.h"

namespace ckjit::graph {

__attribute__((target("avx2,fma"))) void rotate_heads_avx2(float* x, int64_t n_heads, int64_t head_dim, const float* cos_v,
                                                           const float* sin_v) {
  rotate_heads(x, n_heads, head_dim, cos_v, sin_v);
}

}  // namespace ckjit::graph
