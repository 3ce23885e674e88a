#pragma once
// The element-wise and attention ops of the Qwen3-VL decoder layer, as plain C++ following the
// float order of llama.cpp's CPU backend where it is known (spec/qwen3vl.md A.3, A.4, A.6).
#include <cstdint>
#include <vector>

#include "topology/workers.h"
#include "topology/isa.h"

namespace ckjit::graph {

// y = (x * (1 / sqrtf(mean + eps))) * w, mean of the float squares summed in double — the order of
// ggml rms_norm (x*x in float, sum in double, mean converted to float) followed by ggml_mul.
// y may alias x.
void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps);
// rms_norm of `count` vectors (x + i*ldx -> y + i*ldy; y may alias x), four at a time: their
// double sums are independent chains that interleave (one chain is bound by the add latency).
// Each vector's operations and order are rms_norm's: the same bits.
void rms_norm_vectors(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t count, int64_t n, float eps);

// Causal GQA attention over an f16 KV cache (keys/values of positions [0, n_kv) of one layer, row
// stride kv_width halves). q: m rows of n_head*head_dim; row i is the query at position
// pos0 + i and attends to cache positions [0, pos0 + i]. out: m rows of n_head*head_dim.
// Every implementation follows the float order of llama.cpp's CPU flash-attention row path on
// AVX-512 (see layer_ops.cpp), so the output is bit-identical on every ISA and thread count.
// scratch: attention_scratch_floats(head_dim, n_ctx) floats per worker.
struct AttentionShape {
  int64_t n_head, n_head_kv, head_dim;
  float scale;  // 1/sqrt(head_dim)
};
int64_t attention_scratch_floats(int64_t head_dim, int64_t n_ctx);

// The attention op with its copy chosen once for the given Isa by jit::hand_isa (jit/hand_kernels.h):
// "avx512" (AVX512F), "avx2" (AVX2 + FMA + F16C) or "portable" (the C++ twin, any CPU). All give
// the same bits; only the instructions differ (layer_ops_kernels.h).
inline constexpr int64_t kMaxHeadDim = 512;  // the query row is widened on the stack

class Attention {
 public:
  explicit Attention(const topo::Isa& isa);
  const char* impl() const { return impl_; }
  void run(Workers& pool, const AttentionShape& s, const float* q, int64_t m, int64_t pos0, const uint16_t* k_cache,
           const uint16_t* v_cache, float* out, float* scratch, int64_t scratch_per_worker) const;

  // One query row of one head over n_keys keys (the per-task body of run()); qh and acc: head_dim
  // halves of scratch each, scores: n_keys floats. For tests.
  using RowFn = void (*)(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* k, const uint16_t* v,
                         int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores);
  RowFn row() const { return row_; }

 private:
  const char* impl_;
  RowFn row_;
};

// y = silu(g) * u in the float order of llama.cpp's CPU swiglu on AVX-512 (ggml_vec_swiglu_f32 with
// its vectorised expf: exponent n by the 1.5*2^23 trick, two-step ln2 reduction, degree-5 polynomial,
// scalef; silu = x / (1 + exp(-x))) on every 16-element chunk, and g / (1 + std::exp(-g)) * u on the
// n % 16 elements after the last one (llama.cpp's scalar tail). Any n. Chosen once like Attention:
// "avx512" (AVX512F + DQ), "avx2" (AVX2 + FMA + F16C) or "portable"; bit-identical to each other.
class SwiGLU {
 public:
  explicit SwiGLU(const topo::Isa& isa);
  const char* impl() const { return impl_; }
  void run(const float* g, const float* u, float* y, int64_t n) const { fn_(g, u, y, n); }

 private:
  using Fn = void (*)(const float* g, const float* u, float* y, int64_t n);
  const char* impl_;
  Fn fn_;
};

}  // namespace ckjit::graph
