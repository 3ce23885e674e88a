#pragma once
// The element-wise and attention ops of the Qwen3-VL decoder layer, as plain C++ following the
// float order of llama.cpp's CPU backend where it is known (spec/qwen3vl.md A.3, A.4, A.6).
#include <cstdint>
#include <vector>

#include "graph/workers.h"

namespace ckjit::graph {

// y = (x * (1 / sqrtf(mean + eps))) * w, mean of the float squares summed in double — the order of
// ggml rms_norm (x*x in float, sum in double, mean converted to float) followed by ggml_mul.
// y may alias x.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);

// Causal GQA attention over an f16 KV cache (keys/values of positions [0, n_kv) of one layer, row
// stride kv_width halves). q: m rows of n_head*head_dim; row i is the query at position
// pos0 + i and attends to cache positions [0, pos0 + i]. out: m rows of n_head*head_dim.
// With AVX-512 this is the float order of llama.cpp's CPU flash-attention row path (see
// layer_ops.cpp); otherwise q is rounded to f16, scores and a two-pass softmax in f32.
// scratch: attention_scratch_floats(head_dim, n_ctx) floats per worker.
struct AttentionShape {
  int64_t n_head, n_head_kv, head_dim;
  float scale;  // 1/sqrt(head_dim)
};
void attention(Workers& pool, const AttentionShape& s, const float* q, int64_t m, int64_t pos0, const uint16_t* k_cache,
               const uint16_t* v_cache, float* out, float* scratch, int64_t scratch_per_worker);

int64_t attention_scratch_floats(int64_t head_dim, int64_t n_ctx);

// y = silu(g) * u in the float order of llama.cpp's CPU swiglu on AVX-512 (ggml_vec_swiglu_f32 with
// its vectorised expf: exponent n by the 1.5*2^23 trick, two-step ln2 reduction, degree-5 polynomial,
// scalef; silu = x / (1 + exp(-x))). n a multiple of 16; AVX-512 only (swiglu_llama_available()).
bool swiglu_llama_available();
void swiglu_llama(const float* g, const float* u, float* y, int64_t n);

// Converts n floats to f16 (round to nearest even).
void to_f16(const float* x, uint16_t* y, int64_t n);

}  // namespace ckjit::graph
