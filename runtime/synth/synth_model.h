#pragma once
// Writes a random-weight Qwen3-VL GGUF pair (text + mmproj) that llama.cpp loads and runs: the
// layout of qwen3vl_layout.h, the metadata llama.cpp's converter writes (with the real Qwen3
// tokenizer and chat template), and weights from random_tensor.h scaled so activations stay finite
// and outputs vary (synth_init.h). Same dims, options and seed give the same bytes, whatever the
// thread count.
#include <cstdint>
#include <functional>
#include <string>

#include "runtime/gguf/gguf_writer.h"
#include "runtime/synth/qwen3vl_layout.h"

namespace ckjit::synth {

struct SynthOptions {
  uint64_t seed = 0;
  float sharpness = 1.0f;  // ~ standard deviation of the output logits (output_norm = sharpness)
  // A "chain" model, for greedy-text tests: the next token is perm(current) for a fixed random
  // cyclic permutation of the vocabulary, with a top-2 margin wide relative to the logits
  // themselves (so llama.cpp's and ckjit's float-order differences, relative ~1e-5..1e-3 of the
  // logit scale, cannot flip it; sharpness only rescales every logit alike and cannot do that).
  // Needs an untied output: output row perm(x) = token_embd row x (requantized), every residual
  // update is scaled down (synth_init.h, kChainResidual) so the input token's embedding dominates
  // the final hidden state. Its logit is then ~sharpness * sqrt(E), the others ~sharpness * N(0, 1)
  // (inner products of near-orthogonal random rows), and attention and the FFN still move them.
  bool chain = false;
  qwen3vl::TextMix text_mix = qwen3vl::TextMix::Q4_K_M;
  qwen3vl::MmprojType mmproj_type = qwen3vl::MmprojType::F16;
  int threads = 0;            // 0: all hardware threads
  std::string tokenizer_dir;  // holds tokenizer.json and tokenizer_config.json (HF layout)
};

// Called after each written chunk: bytes of tensor data done / total over both files.
using Progress = std::function<void(uint64_t done, uint64_t total)>;

struct SynthFiles {
  std::string text_path, mmproj_path;
  uint64_t text_bytes = 0, mmproj_bytes = 0;  // file sizes
};

// "<name>-Q4_K_M.gguf" / "<name>-MIXED.gguf" and "mmproj-<name>-f16.gguf" / "mmproj-<name>-q8_0.gguf".
std::string text_file_name(const std::string& name, qwen3vl::TextMix mix);
std::string mmproj_file_name(const std::string& name, qwen3vl::MmprojType type);

// Validates dims and options, then writes both files into out_dir (created if missing), named
// after dims.preset. Throws ckjit::Error on bad input or I/O failure.
SynthFiles write_qwen3vl_pair(const qwen3vl::ModelDims& dims, const SynthOptions& options, const std::string& out_dir,
                              const Progress& progress = {});

// The mmproj alone at path, as write_qwen3vl_pair writes it (no tokenizer needed): small vision
// shapes for tests and the model-load fuzzer's seeds.
void write_qwen3vl_mmproj(const qwen3vl::ModelDims& dims, const SynthOptions& options, const std::string& path);

// The tokenizer.* keys llama.cpp's converter writes for the Qwen3 tokenizer (tokens, types, merges,
// special ids, chat template), from tokenizer_dir; n_vocab is the model's vocabulary (rows).
void set_qwen3_tokenizer(gguf::GgufWriter& w, const std::string& tokenizer_dir, int64_t n_vocab);

}  // namespace ckjit::synth
