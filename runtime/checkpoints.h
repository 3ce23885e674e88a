#pragma once
// The semantic checkpoints the text decoder and the vision tower publish to a tap
// (runtime/tap.h), in evaluation order within a layer, with the op that produces each and the
// checkpoints it reads. ckjit xray compares runs at these names; a replay feeds an op the
// reference's values of its inputs.
#include <cstdint>
#include <string>
#include <vector>

namespace ckjit {

struct CheckpointKind {
  const char* suffix;  // after "L<i>." / "V<i>." (or the whole name for the model-level ones)
  const char* op;      // what produces it
};

// Text decoder, per layer i: "L<i>.<suffix>"; then "final_norm", "logits". "embd" comes first.
inline const std::vector<CheckpointKind>& text_layer_checkpoints() {
  static const std::vector<CheckpointKind> k = {
      {"attn_norm", "RMSNorm (attn_norm) of the layer input"},
      {"q", "attn_q matmul"},
      {"k", "attn_k matmul"},
      {"v", "attn_v matmul"},
      {"q_normed", "per-head RMSNorm of Q (attn_q_norm)"},
      {"k_normed", "per-head RMSNorm of K (attn_k_norm)"},
      {"q_roped", "M-RoPE of Q"},
      {"k_roped", "M-RoPE of K (written to the f16 KV cache)"},
      {"attn_out", "attention over the KV cache (softmax(QK^T)V)"},
      {"attn_residual", "attn_output matmul + residual"},
      {"ffn_norm", "RMSNorm (ffn_norm)"},
      {"ffn_act", "Gate-Up matmuls + SwiGLU"},
      {"l_out", "ffn_down matmul + residual"},
      {"deepstack_out", "+ deepstack slice of the image rows"},
  };
  return k;
}

// Vision tower: "V.patch_embd", "V.pos_embd", per layer "V<i>.<suffix>", "V.deepstack<k>", "V.merger".
inline const std::vector<CheckpointKind>& vision_layer_checkpoints() {
  static const std::vector<CheckpointKind> k = {
      {"ln1", "LayerNorm (ln1) of the block input"},
      {"qkv", "fused QKV matmul + bias"},
      {"q_roped", "2D RoPE of Q"},
      {"k_roped", "2D RoPE of K"},
      {"attn", "full attention over the patches"},
      {"attn_residual", "attn_out matmul + bias + residual"},
      {"ln2", "LayerNorm (ln2)"},
      {"ffn_act", "ffn_up matmul + bias + GELU"},
      {"block_out", "ffn_down matmul + bias + residual"},
  };
  return k;
}

inline std::string layer_checkpoint(char tower, int64_t layer, const char* suffix) {
  return std::string(1, tower) + std::to_string(layer) + "." + suffix;
}

// Every valid checkpoint name, in evaluation order, for a model of n_layer text layers whose first
// n_deepstack take deepstack slices (and, with a tower of n_vision_layers layers, its n_deepstack
// mergers; 0 without a tower).
std::vector<std::string> checkpoint_names(int64_t n_layer, int64_t n_deepstack, int64_t n_vision_layers);
// The op that produces checkpoint `name` ("" when the name is not a checkpoint).
std::string checkpoint_op(const std::string& name);

}  // namespace ckjit
