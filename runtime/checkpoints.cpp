#include "runtime/checkpoints.h"

#include <cstdlib>

namespace ckjit {

std::vector<std::string> checkpoint_names(int64_t n_layer, int64_t n_deepstack, int64_t n_vision_layers) {
  std::vector<std::string> out;
  if (n_vision_layers > 0) {
    out.push_back("V.patch_embd");
    out.push_back("V.pos_embd");
    for (int64_t l = 0; l < n_vision_layers; ++l)
      for (const auto& k : vision_layer_checkpoints()) out.push_back(layer_checkpoint('V', l, k.suffix));
    for (int64_t d = 0; d < n_deepstack; ++d) out.push_back("V.deepstack" + std::to_string(d));
    out.push_back("V.merger");
  }
  out.push_back("embd");
  for (int64_t l = 0; l < n_layer; ++l)
    for (const auto& k : text_layer_checkpoints())
      if (l < n_deepstack || std::string(k.suffix) != "deepstack_out") out.push_back(layer_checkpoint('L', l, k.suffix));
  out.push_back("final_norm");
  out.push_back("logits");
  return out;
}

std::string checkpoint_op(const std::string& name) {
  if (name == "embd") return "token_embd lookup (or the image row)";
  if (name == "final_norm") return "RMSNorm (output_norm) of the rows whose logits are wanted";
  if (name == "logits") return "LM head matmul (output)";
  if (name == "V.patch_embd") return "patch embedding matmul (both temporal kernels) + bias";
  if (name == "V.pos_embd") return "+ interpolated position table";
  if (name == "V.merger") return "main merger (post LayerNorm, 2x2 grouping, fc1 + GELU + fc2)";
  if (name.rfind("V.deepstack", 0) == 0) return "deepstack merger (2x2 grouping, LayerNorm, fc1 + GELU + fc2)";
  if (name.size() < 3 || (name[0] != 'L' && name[0] != 'V')) return "";
  const size_t dot = name.find('.');
  if (dot == std::string::npos || dot < 2) return "";
  for (size_t i = 1; i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return "";
  const std::string suffix = name.substr(dot + 1);
  const auto& kinds = name[0] == 'L' ? text_layer_checkpoints() : vision_layer_checkpoints();
  for (const auto& k : kinds)
    if (suffix == k.suffix) return k.op;
  return "";
}

}  // namespace ckjit
