#include "vision/vision_hparams.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "runtime/error.h"

namespace ckjit::vision {
namespace {

[[noreturn]] void fail(const gguf::GgufFile& f, const std::string& what) { throw Error(f.name() + ": " + what); }

int64_t req_positive(const gguf::GgufFile& f, const std::string& key) {
  if (!f.has(key)) fail(f, "missing required key '" + key + "' (not a Qwen3-VL mmproj?)");
  const uint32_t v = f.get_u32(key);
  if (v == 0) fail(f, "key '" + key + "' must be positive");
  return int64_t(v);
}

bool is_matrix_type(TensorType t) {
  return t == TensorType::F16 || t == TensorType::BF16 || t == TensorType::F32 || t == TensorType::Q8_0;
}

void expect(const gguf::GgufFile& f, const std::string& name, std::initializer_list<int64_t> ne, bool matrix) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) fail(f, "missing tensor '" + name + "'");
  std::vector<int64_t> want(ne);
  for (size_t i = 0; i < want.size(); ++i)
    if (t->ne[i] != want[i]) {
      std::string w = "[";
      for (size_t j = 0; j < want.size(); ++j) w += (j ? ", " : "") + std::to_string(want[j]);
      fail(f, "tensor '" + name + "' has shape " + t->shape_string() + ", expected " + w + "]");
    }
  for (size_t i = want.size(); i < gguf::kMaxDims; ++i)
    if (t->ne[i] != 1) fail(f, "tensor '" + name + "' has shape " + t->shape_string() + " (too many dimensions)");
  if (matrix ? !is_matrix_type(t->type.type) : t->type.type != TensorType::F32)
    fail(f, "tensor '" + name + "' has type " + t->type.name + (matrix ? " (the vision tower takes F16, BF16, F32 or Q8_0 matrices)"
                                                                      : " (vectors must be F32)"));
}

}  // namespace

VisionHparams read_vision_hparams(const gguf::GgufFile& f) {
  if (!f.has("general.architecture")) fail(f, "missing 'general.architecture' (not a llama.cpp mmproj file)");
  const std::string arch(f.get_string("general.architecture"));
  if (arch != "clip") fail(f, "architecture '" + arch + "' is not an mmproj (expected 'clip'; is this the text model?)");
  if (!f.has("clip.projector_type")) fail(f, "missing 'clip.projector_type'");
  const std::string proj(f.get_string("clip.projector_type"));
  if (proj != "qwen3vl_merger") fail(f, "projector '" + proj + "' is not supported (ckjit runs Qwen3-VL's qwen3vl_merger)");
  if (f.has("clip.has_vision_encoder") && !f.get_bool("clip.has_vision_encoder")) fail(f, "the file has no vision encoder");

  VisionHparams h;
  h.n_embd = req_positive(f, "clip.vision.embedding_length");
  h.n_ff = req_positive(f, "clip.vision.feed_forward_length");
  h.n_layer = req_positive(f, "clip.vision.block_count");
  h.n_head = req_positive(f, "clip.vision.attention.head_count");
  h.proj_dim = req_positive(f, "clip.vision.projection_dim");
  h.patch = req_positive(f, "clip.vision.patch_size");
  if (f.has("clip.vision.spatial_merge_size")) h.merge = req_positive(f, "clip.vision.spatial_merge_size");
  if (h.merge != 2) fail(f, "spatial_merge_size " + std::to_string(h.merge) + " is not supported (Qwen3-VL merges 2 x 2)");
  if (h.n_layer > 1024 || h.n_embd > 65536 || h.n_ff > 262144 || h.n_head > 1024 || h.proj_dim > 65536 || h.patch > 64)
    fail(f, "vision dimensions are implausibly large");
  if (f.has("clip.vision.attention.head_dim")) h.head_dim = req_positive(f, "clip.vision.attention.head_dim");
  else {
    if (h.n_embd % h.n_head) fail(f, "embedding_length is not a multiple of attention.head_count");
    h.head_dim = h.n_embd / h.n_head;
  }
  if (h.head_dim * h.n_head != h.n_embd) fail(f, "head_dim x head_count must equal embedding_length");
  if (h.head_dim % 8) fail(f, "vision head dim " + std::to_string(h.head_dim) + " is not a multiple of 8 (2D RoPE needs 4 equal sections; ckjit's attention takes 8-wide steps)");
  if (f.has("clip.vision.attention.head_count_kv") && f.get_u32("clip.vision.attention.head_count_kv") != h.n_head)
    fail(f, "grouped vision attention (head_count_kv != head_count) is not supported");
  if (f.has("clip.vision.attention.layer_norm_epsilon")) h.eps = f.get_f32("clip.vision.attention.layer_norm_epsilon");
  if (!(h.eps > 0.0f) || !(h.eps < 1.0f)) fail(f, "layer_norm_epsilon must be in (0, 1)");
  for (auto [key, dst] : {std::pair{"clip.vision.image_mean", h.mean}, std::pair{"clip.vision.image_std", h.std}}) {
    if (!f.has(key)) continue;
    auto v = f.get_array<float>(key);
    if (v.size() != 3) fail(f, std::string("'") + key + "' must hold 3 floats");
    for (int c = 0; c < 3; ++c) dst[c] = v[size_t(c)];
  }
  for (float s : h.std)
    if (!(std::fabs(s) > 1e-6f) || !std::isfinite(s)) fail(f, "clip.vision.image_std must be finite and non-zero");
  for (float m : h.mean)
    if (!std::isfinite(m)) fail(f, "clip.vision.image_mean must be finite");

  const int64_t C = h.n_embd, P = h.patch, C4 = h.merged_width(), D = h.proj_dim;
  expect(f, "v.patch_embd.weight", {P, P, 3, C}, true);
  if (f.find_tensor("v.patch_embd.weight.1")) expect(f, "v.patch_embd.weight.1", {P, P, 3, C}, true);
  expect(f, "v.patch_embd.bias", {C}, false);
  const gguf::TensorInfo* pos = f.find_tensor("v.position_embd.weight");
  if (!pos) fail(f, "missing tensor 'v.position_embd.weight'");
  h.pos_side = int64_t(std::llround(std::sqrt(double(pos->ne[1]))));
  if (h.pos_side < 2 || h.pos_side * h.pos_side != pos->ne[1])
    fail(f, "v.position_embd.weight has " + std::to_string(pos->ne[1]) + " rows, not a square grid of at least 2 x 2");
  expect(f, "v.position_embd.weight", {C, pos->ne[1]}, false);
  for (int64_t l = 0; l < h.n_layer; ++l) {
    const std::string b = "v.blk." + std::to_string(l) + ".";
    expect(f, b + "ln1.weight", {C}, false), expect(f, b + "ln1.bias", {C}, false);
    expect(f, b + "attn_qkv.weight", {C, 3 * C}, true), expect(f, b + "attn_qkv.bias", {3 * C}, false);
    expect(f, b + "attn_out.weight", {C, C}, true), expect(f, b + "attn_out.bias", {C}, false);
    expect(f, b + "ln2.weight", {C}, false), expect(f, b + "ln2.bias", {C}, false);
    expect(f, b + "ffn_up.weight", {C, h.n_ff}, true), expect(f, b + "ffn_up.bias", {h.n_ff}, false);
    expect(f, b + "ffn_down.weight", {h.n_ff, C}, true), expect(f, b + "ffn_down.bias", {C}, false);
  }
  expect(f, "v.post_ln.weight", {C}, false), expect(f, "v.post_ln.bias", {C}, false);
  expect(f, "mm.0.weight", {C4, C4}, true), expect(f, "mm.0.bias", {C4}, false);
  const gguf::TensorInfo* mm2 = f.find_tensor("mm.2.weight");
  if (mm2 && mm2->ne[1] != D)
    fail(f, "mm.2.weight gives " + std::to_string(mm2->ne[1]) + " output columns but projection_dim is " + std::to_string(D));
  expect(f, "mm.2.weight", {C4, D}, true), expect(f, "mm.2.bias", {D}, false);

  // Deepstack layers: like llama.cpp, wherever v.deepstack.N.* tensors exist.
  for (const auto& t : f.tensors()) {
    const std::string_view n = t.name;
    if (!n.starts_with("v.deepstack.") || !n.ends_with(".fc1.weight")) continue;
    std::string_view num = n.substr(12, n.size() - 12 - 11);
    int64_t idx = -1;
    auto [p, ec] = std::from_chars(num.data(), num.data() + num.size(), idx);
    if (ec != std::errc() || p != num.data() + num.size() || idx < 0 || idx >= h.n_layer)
      fail(f, "tensor '" + std::string(n) + "' names no vision layer");
    h.deepstack_layers.push_back(idx);
  }
  std::sort(h.deepstack_layers.begin(), h.deepstack_layers.end());
  for (int64_t l : h.deepstack_layers) {
    const std::string b = "v.deepstack." + std::to_string(l) + ".";
    expect(f, b + "norm.weight", {C4}, false), expect(f, b + "norm.bias", {C4}, false);
    expect(f, b + "fc1.weight", {C4, C4}, true), expect(f, b + "fc1.bias", {C4}, false);
    expect(f, b + "fc2.weight", {C4, D}, true), expect(f, b + "fc2.bias", {D}, false);
  }
  return h;
}

}  // namespace ckjit::vision
