#pragma once
// The Qwen3-VL text decoder's weights and everything fixed at load (spec/qwen3vl.md A.3):
// hyper-parameters, packed weights with their kernels and plans, norms, the RoPE tables. Immutable
// after construction, so any number of Sessions (graph/session.h) may share one model and run at
// the same time from different threads. Built from GGUF metadata only (nothing hard-coded);
// a bad file fails here with an Error naming the key or tensor.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "graph/hparams.h"
#include "graph/layer_ops.h"
#include "graph/linear.h"
#include "graph/linear_group.h"
#include "graph/rope.h"
#include "topology/workers.h"
#include "topology/isa.h"

namespace ckjit::graph {

struct ModelOptions {
  // linear.isa defaults to what this process may run (jit::runtime_isa()). linear.planner may be
  // left null: the model then plans with the cost model alone (no profile) for pool's size.
  // linear.plan_rows: the prefill rows the plans are made for (a session's n_ubatch).
  LinearSetup linear = default_linear_setup();
  static LinearSetup default_linear_setup();
};

class TextModel {
 public:
  struct Layer {
    const float *attn_norm, *q_norm, *k_norm, *ffn_norm;
    std::unique_ptr<Linear> wq, wk, wv, wo, gate, up, down;
    OpDesc gate_up_desc;  // the Gate-Up SwiGLU op, for the per-call report
  };

  // Validates the file (Error on any mismatch), repacks weights and generates kernels; pool runs
  // the repacking. The file must outlive the model (weights are read from its mapping).
  TextModel(const gguf::GgufFile& f, const ModelOptions& options, Workers& pool);
  ~TextModel();
  // The memory the constructor takes besides the file's mapping (the repacked copy of every matrix;
  // token_embd is read in place unless it is also the tied output), for a check before loading.
  static double load_bytes(const gguf::GgufFile& f);

  const Hparams& hparams() const { return hp_; }
  const ModelOptions& options() const { return opt_; }
  const std::vector<Layer>& layers() const { return layers_; }
  const Linear& lm_head() const { return *lm_head_; }
  const float* output_norm() const { return output_norm_; }
  const gguf::TensorInfo& token_embd() const { return *tensors_.token_embd; }
  const Rope& rope() const { return *rope_; }
  const Attention& attention() const { return *attention_; }
  bool fused_ffn() const { return fused_ffn_; }
  // Scratch the input preparation of any op needs for m rows (the largest group).
  int64_t prepare_scratch_bytes(int64_t m) const;

  // One line per weight tensor type: count, shape, and the kernels it takes.
  std::vector<std::string> dtype_report() const;
  // One line per distinct Linear op shape: the plan used and whether the profile or the cost model chose it.
  std::vector<std::string> plan_report() const;
  // Whether any weight runs the scalar reference (only with --no-jit, or Q5_K under --llama-order).
  bool uses_reference() const;

 private:
  Hparams hp_;
  ModelOptions opt_;
  std::unique_ptr<LinearPlanner> own_planner_;  // when options.linear.planner is null
  ModelTensors tensors_;
  std::vector<Layer> layers_;
  std::unique_ptr<Linear> lm_head_;
  const float* output_norm_ = nullptr;
  std::unique_ptr<Rope> rope_;
  std::unique_ptr<Attention> attention_;
  bool fused_ffn_ = true;
};

}  // namespace ckjit::graph
