#pragma once
// The Qwen3-VL text decoder (spec/qwen3vl.md A.3), built from a GGUF: token_embd lookup, per layer
// RMSNorm -> Q/K/V -> per-head Q/K RMSNorm -> interleaved M-RoPE -> causal GQA attention over the
// f16 KV cache -> output projection + residual -> RMSNorm -> fused Gate-Up SwiGLU -> down projection
// + residual; final RMSNorm and the (tied or untied) LM head. eval() runs a batch of tokens at the
// next positions: M rows through the GEMM kernels (prefill, in chunks of n_ubatch) or M = 1 through
// GEMV (decode). All activations live in one arena planned at construction.
// Text tokens only: deepstack slices (image rows) are zero for text and are not added.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "graph/arena.h"
#include "graph/hparams.h"
#include "graph/kv_cache.h"
#include "graph/layer_ops.h"
#include "graph/linear.h"
#include "graph/workers.h"

namespace ckjit::graph {

struct DecoderOptions {
  int64_t n_ctx = 4096;
  int64_t n_ubatch = 512;   // rows per prefill chunk
  bool all_logits = false;  // keep logits of every row of a chunk (tests, perplexity)
  // linear.planner may be left null: the decoder then plans with the cost model alone (no profile)
  // for the pool's size; linear.plan_rows is set to n_ubatch either way.
  LinearSetup linear;
};

class Decoder {
 public:
  // Validates the file (Error on any mismatch), repacks weights and generates kernels.
  Decoder(const gguf::GgufFile& f, const DecoderOptions& options, Workers& pool);
  ~Decoder();

  const Hparams& hparams() const { return hp_; }
  int64_t n_ctx() const { return opt_.n_ctx; }
  int64_t n_past() const { return n_past_; }
  void reset() { n_past_ = 0; }

  // Appends `tokens` at positions n_past().. and returns the logits (n_vocab floats) of the last one.
  // all_logits_out (needs options.all_logits): receives tokens.size() rows of n_vocab logits.
  const float* eval(std::span<const int32_t> tokens, float* all_logits_out = nullptr);

  // One line per weight tensor type: count, shape, and the kernel path it takes.
  std::vector<std::string> dtype_report() const;
  // One line per distinct Linear op shape: the plan used and whether the profile or the cost model chose it.
  std::vector<std::string> plan_report() const;
  size_t arena_bytes() const { return arena_.bytes(); }
  size_t kv_bytes() const { return kv_->bytes(); }

 private:
  struct Layer;
  void eval_chunk(const int32_t* tokens, int64_t m, float* all_logits_out);
  // Quantizes m rows of x (k wide) for `lin`, reusing the result when lin's activation type matches.
  const void* quantized_for(const Linear& lin, const float* x, int64_t k, int64_t m);

  Hparams hp_;
  DecoderOptions opt_;
  Workers& pool_;
  std::unique_ptr<LinearPlanner> own_planner_;  // when options.linear.planner is null
  ModelTensors tensors_;
  std::vector<Layer> layers_;
  std::unique_ptr<Linear> lm_head_;
  const float* output_norm_ = nullptr;
  std::unique_ptr<Rope> rope_;
  std::unique_ptr<KvCache> kv_;
  Arena arena_;
  struct Slots { size_t h0, h1, xn, xq_k, xq_0, q, k, v, attn, ffn, ffn_tmp, logits, att_scratch, cos, sin; } s_{};
  int64_t att_scratch_per_worker_ = 0;
  const float* quant_src_ = nullptr;  // what the activation buffers currently hold
  bool quant_k_valid_ = false, quant_0_valid_ = false;
  int64_t n_past_ = 0;
};

}  // namespace ckjit::graph
