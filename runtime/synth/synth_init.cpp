#include "runtime/synth/synth_init.h"

#include <cmath>
#include <string>

#include "runtime/error.h"

namespace ckjit::synth {

namespace {

constexpr float kFfnGain = 1.5f;  // gate/up: silu(gate) * up then adds a visible update per layer

// Updates written into the residual stream (attn_output, ffn_down) by every layer after the first
// are scaled by 1/sqrt(layers): with full-size updates a deep random net is chaotic (llama.cpp's own
// flash-attention on/off logits differed by 30% on the 2B shape; 4% with this scale, near the 2%
// that one layer's F16 rounding gives). Layer 0 keeps full size so it, not the tiny token embedding,
// dominates the residual (a residual dominated by the input token makes a tied model repeat it).
float residual_scale(std::string_view name, int64_t n_layer) {
  return name.rfind("blk.0.", 0) == 0 ? 1.0f : 1.0f / std::sqrt(float(n_layer));
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}
float fan_in(int64_t n) { return 1.0f / std::sqrt(float(n)); }

}  // namespace

WeightInit text_weight_init(const qwen3vl::TensorSpec& t, const qwen3vl::TextDims& d, float sharpness, bool chain) {
  const std::string& n = t.name;
  // A layer's updates have an rms of about 1 at full size; the token embedding's is 1/sqrt(E).
  const float update = chain ? kChainResidual * fan_in(d.n_embd) : 1.0f;
  const float embd_std = fan_in(d.n_embd);  // rows of norm ~1: logits = output_norm * N(0, 1)
  if (n == "token_embd.weight" || n == "output.weight") return {0.0f, embd_std};
  if (n == "output_norm.weight") return {sharpness, 0.05f * sharpness};
  if (ends_with(n, ".attn_norm.weight") || ends_with(n, ".ffn_norm.weight")) return {1.0f, 0.1f};
  if (ends_with(n, ".attn_q_norm.weight") || ends_with(n, ".attn_k_norm.weight")) return {2.0f, 0.2f};
  if (ends_with(n, ".attn_q.weight") || ends_with(n, ".attn_k.weight") || ends_with(n, ".attn_v.weight")) {
    return {0.0f, fan_in(d.n_embd)};
  }
  if (ends_with(n, ".attn_output.weight")) return {0.0f, update * residual_scale(n, d.n_layer) * fan_in(d.n_head * d.head_dim)};
  if (ends_with(n, ".ffn_gate.weight") || ends_with(n, ".ffn_up.weight")) return {0.0f, kFfnGain * fan_in(d.n_embd)};
  if (ends_with(n, ".ffn_down.weight")) return {0.0f, update * residual_scale(n, d.n_layer) * fan_in(d.n_ff)};
  throw Error("synthetic weights: no init rule for text tensor '" + n + "'");
}

WeightInit mmproj_weight_init(const qwen3vl::TensorSpec& t, const qwen3vl::VisionDims& v) {
  const std::string& n = t.name;
  const int64_t C = v.n_embd, C4 = 4 * C;
  if (n == "v.patch_embd.weight" || n == "v.patch_embd.weight.1") {
    return {0.0f, fan_in(2 * 3 * v.patch_size * v.patch_size)};  // both temporal slices add up
  }
  if (n == "v.position_embd.weight") return {0.0f, 0.5f};
  // LayerNorm weights around 1, every bias small.
  if (ends_with(n, "ln1.weight") || ends_with(n, "ln2.weight") || ends_with(n, "post_ln.weight") ||
      ends_with(n, ".norm.weight")) {
    return {1.0f, 0.1f};
  }
  if (ends_with(n, ".bias")) return {0.0f, 0.02f};
  // Vision blocks: every residual update scaled by 1/sqrt(depth) (the patch embedding plus position
  // table start the stream; see residual_scale).
  const float depth = 1.0f / std::sqrt(float(v.n_layer));
  if (ends_with(n, ".attn_qkv.weight")) return {0.0f, fan_in(C)};
  if (ends_with(n, ".attn_out.weight")) return {0.0f, depth * fan_in(C)};
  if (ends_with(n, ".ffn_up.weight")) return {0.0f, kFfnGain * fan_in(C)};
  if (ends_with(n, ".ffn_down.weight")) return {0.0f, depth * fan_in(v.n_ff)};
  if (n == "mm.0.weight" || n == "mm.2.weight" || ends_with(n, ".fc1.weight") || ends_with(n, ".fc2.weight")) {
    return {0.0f, fan_in(C4)};
  }
  throw Error("synthetic weights: no init rule for mmproj tensor '" + n + "'");
}

}  // namespace ckjit::synth
