#pragma once
// Qwen3-VL text decoder hyper-parameters and tensors, read from GGUF metadata and validated
// (spec/qwen3vl.md A.1, A.2). Nothing about model size is hard-coded: every dimension comes from
// the file, and every tensor the forward pass touches is checked for presence, shape and type
// before anything runs, so a bad file fails at load with a message naming the key or tensor.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_reader.h"

namespace ckjit::graph {

struct Hparams {
  int64_t n_embd = 0;       // E
  int64_t n_layer = 0;
  int64_t n_ff = 0;         // F
  int64_t n_head = 0;       // Hq
  int64_t n_head_kv = 0;    // Hkv
  int64_t head_dim = 0;     // key_length (== value_length); may differ from E / Hq
  int64_t n_vocab = 0;      // rows of token_embd
  int64_t n_ctx_train = 0;
  float rms_eps = 1e-6f;
  float rope_base = 10000.0f;
  std::array<int32_t, 4> rope_sections{};  // M-RoPE sections [t, h, w, e]
  int64_t n_deepstack = 0;
  bool tied_output = true;  // no output.weight: the LM head is token_embd

  int64_t q_width() const { return n_head * head_dim; }
  int64_t kv_width() const { return n_head_kv * head_dim; }
};

struct LayerTensors {
  const gguf::TensorInfo *attn_norm, *wq, *wk, *wv, *q_norm, *k_norm, *wo;
  const gguf::TensorInfo *ffn_norm, *gate, *up, *down;
};

struct ModelTensors {
  const gguf::TensorInfo* token_embd = nullptr;
  const gguf::TensorInfo* output_norm = nullptr;
  const gguf::TensorInfo* output = nullptr;  // token_embd when tied
  std::vector<LayerTensors> layers;
};

// Weight types a matmul may have (each has a JIT kernel or the scalar reference path).
bool is_matmul_type(TensorType t);

// Reads and validates the hyper-parameters. Throws ckjit::Error naming the file and the key.
Hparams read_hparams(const gguf::GgufFile& f);
// Finds and validates every tensor (presence, exact shape, supported type).
ModelTensors find_tensors(const gguf::GgufFile& f, const Hparams& hp);

}  // namespace ckjit::graph
