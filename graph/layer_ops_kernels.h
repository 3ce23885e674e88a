#pragma once
// The copies of layer_ops' kernels, each with the same signature and float order, so the same
// bits: AVX-512 (layer_ops_avx512.cpp), AVX2 + FMA + F16C (layer_ops_avx2.cpp) and the portable
// C++ twins (layer_ops_portable.cpp). Attention and SwiGLU take one at construction, the one
// jit::hand_isa chooses for the load's Isa (layer_ops.cpp).
#include <cstdint>

#include "graph/layer_ops.h"

namespace ckjit::graph::kernels {

// Attention::RowFn: one query row of one head (layer_ops.cpp's comment has the float order).
void attention_row_avx512(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* k, const uint16_t* v,
                          int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores);
void attention_row_avx2(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* k, const uint16_t* v,
                        int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores);
void attention_row_portable(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* k, const uint16_t* v,
                            int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores);

// SwiGLU's y = silu(g) * u over n elements.
void swiglu_avx512(const float* g, const float* u, float* y, int64_t n);
void swiglu_avx2(const float* g, const float* u, float* y, int64_t n);
void swiglu_portable(const float* g, const float* u, float* y, int64_t n);
// llama.cpp's scalar tail (ggml_silu_f32(x) * g) over elements [i, n), the same in every copy.
void swiglu_tail(const float* g, const float* u, float* y, int64_t i, int64_t n);

}  // namespace ckjit::graph::kernels
