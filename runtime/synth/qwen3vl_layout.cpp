#include "runtime/synth/qwen3vl_layout.h"

#include <cmath>

#include "runtime/error.h"

namespace ckjit::qwen3vl {

namespace {

ModelDims make_preset(std::string name, int64_t e, int64_t layers, int64_t ff, int64_t hq, int64_t hkv, bool tied,
                      int64_t c, int64_t vlayers, int64_t vff, int64_t vheads, std::vector<int64_t> ds) {
  ModelDims d;
  d.preset = std::move(name);
  d.text.n_embd = e;
  d.text.n_layer = layers;
  d.text.n_ff = ff;
  d.text.n_head = hq;
  d.text.n_head_kv = hkv;
  d.text.tied_output = tied;
  d.vision.n_embd = c;
  d.vision.n_layer = vlayers;
  d.vision.n_ff = vff;
  d.vision.n_head = vheads;
  d.vision.deepstack_layers = std::move(ds);
  return d;
}

std::string err_prefix(const ModelDims& d) { return "model dims" + (d.preset.empty() ? "" : " (" + d.preset + ")") + ": "; }

}  // namespace

const std::vector<std::string>& preset_names() {
  static const std::vector<std::string> names{"tiny", "2b", "4b", "8b"};
  return names;
}

ModelDims preset_dims(std::string_view name) {
  // Published numbers: spec/qwen3vl.md E. tiny keeps the real vocabulary and head_dim 128 (so the
  // real tokenizer, tied Q6_K embedding and M-RoPE sections apply unchanged) with small widths.
  if (name == "tiny") return make_preset("tiny", 256, 4, 768, 2, 1, true, 128, 4, 256, 2, {1, 2, 3});
  if (name == "2b") return make_preset("2b", 2048, 28, 6144, 16, 8, true, 1024, 24, 4096, 16, {5, 11, 17});
  if (name == "4b") return make_preset("4b", 2560, 36, 9728, 32, 8, true, 1024, 24, 4096, 16, {5, 11, 17});
  if (name == "8b") return make_preset("8b", 4096, 36, 12288, 32, 8, false, 1152, 27, 4304, 16, {8, 16, 24});
  std::string list;
  for (const auto& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  throw Error("unknown preset '" + std::string(name) + "' (expected one of: " + list + ")");
}

void validate(const ModelDims& d) {
  const std::string p = err_prefix(d);
  const TextDims& t = d.text;
  const VisionDims& v = d.vision;
  auto positive = [&](int64_t x, const char* what) {
    if (x <= 0) throw Error(p + what + " must be positive (got " + std::to_string(x) + ")");
  };
  positive(t.n_embd, "text embedding length");
  positive(t.n_layer, "text layer count");
  positive(t.n_ff, "text FFN length");
  positive(t.n_head, "text head count");
  positive(t.n_head_kv, "text KV head count");
  positive(t.head_dim, "text head dim");
  positive(t.n_vocab, "vocabulary size");
  positive(v.n_embd, "vision embedding length");
  positive(v.n_layer, "vision layer count");
  positive(v.n_ff, "vision FFN length");
  positive(v.n_head, "vision head count");
  // K-quant rows are 256-element super-blocks: every text matrix's ne[0] must divide into them.
  auto k_row = [&](int64_t x, const char* what) {
    if (x % 256 != 0) throw Error(p + what + " (" + std::to_string(x) + ") must be a multiple of 256 for K-quant rows");
  };
  k_row(t.n_embd, "text embedding length");
  k_row(t.n_ff, "text FFN length");
  k_row(t.n_head * t.head_dim, "query width (heads x head dim)");
  if (t.n_head % t.n_head_kv != 0) throw Error(p + "text head count must be a multiple of the KV head count");
  if (t.head_dim % 2 != 0) throw Error(p + "text head dim must be even (RoPE rotates pairs)");
  if (t.n_deepstack < 0) throw Error(p + "deepstack count must not be negative");
  if (int64_t(v.deepstack_layers.size()) != t.n_deepstack) {
    throw Error(p + "the vision tower must have exactly " + std::to_string(t.n_deepstack) + " deepstack layers");
  }
  for (size_t i = 0; i < v.deepstack_layers.size(); ++i) {
    int64_t l = v.deepstack_layers[i];
    if (l < 0 || l >= v.n_layer || (i > 0 && l <= v.deepstack_layers[i - 1])) {
      throw Error(p + "deepstack layers must be increasing vision layer indices below " + std::to_string(v.n_layer));
    }
  }
  if (v.n_embd % v.n_head != 0 || (v.n_embd / v.n_head) % 4 != 0) {
    throw Error(p + "vision head dim (embedding / heads) must be a whole multiple of 4 (2D RoPE)");
  }
  auto side = int64_t(std::llround(std::sqrt(double(v.n_pos))));
  if (side * side != v.n_pos) throw Error(p + "vision position table size must be a square");
  if (v.image_size != side * v.patch_size) throw Error(p + "vision image size must be sqrt(positions) x patch size");
}

TextMix parse_text_mix(std::string_view s) {
  if (s == "q4_k_m" || s == "Q4_K_M") return TextMix::Q4_K_M;
  if (s == "mixed") return TextMix::Mixed;
  throw Error("unknown text type mix '" + std::string(s) + "' (expected q4_k_m or mixed)");
}

MmprojType parse_mmproj_type(std::string_view s) {
  if (s == "f16" || s == "F16") return MmprojType::F16;
  if (s == "q8_0" || s == "Q8_0") return MmprojType::Q8_0;
  throw Error("unknown mmproj type '" + std::string(s) + "' (expected f16 or q8_0)");
}

std::string text_mix_name(TextMix m) { return m == TextMix::Q4_K_M ? "Q4_K_M" : "MIXED"; }
std::string mmproj_type_name(MmprojType t) { return t == MmprojType::F16 ? "f16" : "q8_0"; }
// llama_ftype: the mixed file is still "mostly Q4_K_M" (the key is informational).
uint32_t text_file_type(TextMix) { return 15; }
uint32_t mmproj_file_type(MmprojType t) { return t == MmprojType::F16 ? 1 : 7; }

std::string blk(int64_t layer, std::string_view suffix) { return "blk." + std::to_string(layer) + "." + std::string(suffix); }
std::string vblk(int64_t layer, std::string_view suffix) { return "v.blk." + std::to_string(layer) + "." + std::string(suffix); }
std::string deepstack(int64_t layer, std::string_view suffix) {
  return "v.deepstack." + std::to_string(layer) + "." + std::string(suffix);
}

bool use_more_bits(int64_t i, int64_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

std::vector<TensorSpec> text_tensors(const TextDims& d, TextMix mix) {
  using T = TensorType;
  const bool mixed = mix == TextMix::Mixed;
  const int64_t E = d.n_embd, q_width = d.n_head * d.head_dim, kv_width = d.n_head_kv * d.head_dim;
  std::vector<TensorSpec> out;
  out.push_back({"token_embd.weight", {E, d.n_vocab}, d.tied_output ? T::Q6_K : T::Q4_K});
  for (int64_t l = 0; l < d.n_layer; ++l) {
    const bool odd = l % 2 == 1;
    const T more = use_more_bits(l, d.n_layer) ? T::Q6_K : T::Q4_K;
    out.push_back({blk(l, "attn_norm.weight"), {E}, T::F32});
    out.push_back({blk(l, "attn_q.weight"), {E, q_width}, mixed && odd ? T::Q5_K : T::Q4_K});
    out.push_back({blk(l, "attn_k.weight"), {E, kv_width}, mixed && !odd ? T::Q8_0 : T::Q4_K});
    out.push_back({blk(l, "attn_v.weight"), {E, kv_width}, more});
    out.push_back({blk(l, "attn_q_norm.weight"), {d.head_dim}, T::F32});
    out.push_back({blk(l, "attn_k_norm.weight"), {d.head_dim}, T::F32});
    out.push_back({blk(l, "attn_output.weight"), {q_width, E}, T::Q4_K});
    out.push_back({blk(l, "ffn_norm.weight"), {E}, T::F32});
    out.push_back({blk(l, "ffn_gate.weight"), {E, d.n_ff}, mixed && !odd ? T::Q8_0 : T::Q4_K});
    out.push_back({blk(l, "ffn_up.weight"), {E, d.n_ff}, mixed && odd ? T::Q5_K : T::Q4_K});
    out.push_back({blk(l, "ffn_down.weight"), {d.n_ff, E}, more});
  }
  out.push_back({"output_norm.weight", {E}, T::F32});
  if (!d.tied_output) out.push_back({"output.weight", {E, d.n_vocab}, mixed ? T::Q8_0 : T::Q6_K});
  return out;
}

std::vector<TensorSpec> mmproj_tensors(const VisionDims& v, int64_t proj_dim, MmprojType type) {
  using T = TensorType;
  const bool f16 = type == MmprojType::F16;
  // The converter falls back to F16 for rows Q8_0 blocks cannot divide (e.g. 8B's Fv = 4304).
  auto matrix = [&](int64_t ne0) { return f16 || ne0 % 32 != 0 ? T::F16 : T::Q8_0; };
  const int64_t C = v.n_embd, C4 = 4 * C, P = v.patch_size;
  std::vector<TensorSpec> out;
  const T patch_type = f16 ? T::F16 : T::F32;
  out.push_back({"v.patch_embd.weight", {P, P, 3, C}, patch_type});
  out.push_back({"v.patch_embd.weight.1", {P, P, 3, C}, patch_type});
  out.push_back({"v.patch_embd.bias", {C}, T::F32});
  out.push_back({"v.position_embd.weight", {C, v.n_pos}, T::F32});
  for (int64_t l = 0; l < v.n_layer; ++l) {
    out.push_back({vblk(l, "ln1.weight"), {C}, T::F32});
    out.push_back({vblk(l, "ln1.bias"), {C}, T::F32});
    out.push_back({vblk(l, "attn_qkv.weight"), {C, 3 * C}, matrix(C)});
    out.push_back({vblk(l, "attn_qkv.bias"), {3 * C}, T::F32});
    out.push_back({vblk(l, "attn_out.weight"), {C, C}, matrix(C)});
    out.push_back({vblk(l, "attn_out.bias"), {C}, T::F32});
    out.push_back({vblk(l, "ln2.weight"), {C}, T::F32});
    out.push_back({vblk(l, "ln2.bias"), {C}, T::F32});
    out.push_back({vblk(l, "ffn_up.weight"), {C, v.n_ff}, matrix(C)});
    out.push_back({vblk(l, "ffn_up.bias"), {v.n_ff}, T::F32});
    out.push_back({vblk(l, "ffn_down.weight"), {v.n_ff, C}, matrix(v.n_ff)});
    out.push_back({vblk(l, "ffn_down.bias"), {C}, T::F32});
  }
  out.push_back({"v.post_ln.weight", {C}, T::F32});
  out.push_back({"v.post_ln.bias", {C}, T::F32});
  out.push_back({"mm.0.weight", {C4, C4}, matrix(C4)});
  out.push_back({"mm.0.bias", {C4}, T::F32});
  out.push_back({"mm.2.weight", {C4, proj_dim}, matrix(C4)});
  out.push_back({"mm.2.bias", {proj_dim}, T::F32});
  for (int64_t l : v.deepstack_layers) {
    out.push_back({deepstack(l, "norm.weight"), {C4}, T::F32});
    out.push_back({deepstack(l, "norm.bias"), {C4}, T::F32});
    out.push_back({deepstack(l, "fc1.weight"), {C4, C4}, matrix(C4)});
    out.push_back({deepstack(l, "fc1.bias"), {C4}, T::F32});
    out.push_back({deepstack(l, "fc2.weight"), {C4, proj_dim}, matrix(C4)});
    out.push_back({deepstack(l, "fc2.bias"), {proj_dim}, T::F32});
  }
  return out;
}

}  // namespace ckjit::qwen3vl
