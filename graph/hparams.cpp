#include "graph/hparams.h"

#include "jit/weight_types.h"
#include "runtime/error.h"
#include "runtime/quants/type_traits.h"

namespace ckjit::graph {
namespace {

constexpr const char* kArch = "qwen3vl";

[[noreturn]] void fail(const gguf::GgufFile& f, const std::string& what) {
  throw Error(f.name() + ": " + what);
}

uint32_t req_u32(const gguf::GgufFile& f, const std::string& key) {
  if (!f.has(key)) fail(f, "missing required key '" + key + "'");
  return f.get_u32(key);
}

int64_t positive(const gguf::GgufFile& f, const std::string& key, uint32_t v) {
  if (v == 0) fail(f, "key '" + key + "' must be positive");
  return int64_t(v);
}

}  // namespace

bool is_matmul_type(TensorType t) {
  const quant::TypeTraits* traits = quant::type_traits(t);
  return jit::has_weight_kernels(t) && traits && traits->llama_dot;  // the JIT path and the reference path
}

Hparams read_hparams(const gguf::GgufFile& f) {
  if (!f.has("general.architecture")) fail(f, "missing 'general.architecture' (not a llama.cpp model file)");
  const std::string arch(f.get_string("general.architecture"));
  if (arch != kArch)
    fail(f, "architecture '" + arch + "' is not supported (ckjit runs '" + kArch + "' text models)");
  const std::string p = std::string(kArch) + ".";
  auto u = [&](const char* key) { return positive(f, p + key, req_u32(f, p + key)); };
  Hparams hp;
  hp.n_embd = u("embedding_length");
  hp.n_layer = u("block_count");
  hp.n_ff = u("feed_forward_length");
  hp.n_head = u("attention.head_count");
  hp.n_head_kv = u("attention.head_count_kv");
  hp.n_ctx_train = u("context_length");
  // key_length is required in practice (4B: E/Hq = 80 != 128); default to E/Hq like llama.cpp.
  if (f.has(p + "attention.key_length")) {
    hp.head_dim = u("attention.key_length");
  } else {
    if (hp.n_embd % hp.n_head != 0) fail(f, "no attention.key_length and E is not a multiple of head_count");
    hp.head_dim = hp.n_embd / hp.n_head;
  }
  if (f.has(p + "attention.value_length") && u("attention.value_length") != hp.head_dim)
    fail(f, "attention.value_length != attention.key_length is not supported");
  if (hp.head_dim % 2 != 0) fail(f, "head dim " + std::to_string(hp.head_dim) + " must be even (rotary pairs)");
  if (hp.n_head % hp.n_head_kv != 0)
    fail(f, "attention.head_count (" + std::to_string(hp.n_head) + ") is not a multiple of head_count_kv (" +
                std::to_string(hp.n_head_kv) + ")");
  const std::string eps_key = p + "attention.layer_norm_rms_epsilon";
  if (!f.has(eps_key)) fail(f, "missing required key '" + eps_key + "'");
  hp.rms_eps = f.get_f32(eps_key);
  if (!(hp.rms_eps > 0.0f)) fail(f, "'" + eps_key + "' must be positive");
  if (auto b = f.get_optional<float>(p + "rope.freq_base")) hp.rope_base = *b;
  if (!(hp.rope_base > 1.0f)) fail(f, "rope.freq_base must be > 1");
  const std::string sec_key = p + "rope.dimension_sections";
  if (!f.has(sec_key)) fail(f, "missing required key '" + sec_key + "'");
  auto sec = f.get_array<int32_t>(sec_key);
  if (sec.size() < 3 || sec.size() > 4) fail(f, "'" + sec_key + "' must hold 3 or 4 integers");
  int64_t total = 0;
  for (size_t i = 0; i < sec.size(); ++i) {
    if (sec[i] < 0) fail(f, "'" + sec_key + "' has a negative section");
    hp.rope_sections[i] = sec[i];
    total += sec[i];
  }
  if (total <= 0 || total > hp.head_dim / 2)
    fail(f, "rope sections sum to " + std::to_string(total) + ", need 1.." + std::to_string(hp.head_dim / 2));
  if (f.has(p + "rope.dimension_count") && f.get_u32(p + "rope.dimension_count") != hp.head_dim)
    fail(f, "partial rotary (rope.dimension_count != head dim) is not supported");
  if (auto n = f.get_optional<uint32_t>(p + "n_deepstack_layers")) hp.n_deepstack = *n;
  const gguf::TensorInfo* te = f.find_tensor("token_embd.weight");
  if (!te) fail(f, "missing tensor 'token_embd.weight'");
  hp.n_vocab = te->ne[1];
  hp.tied_output = f.find_tensor("output.weight") == nullptr;
  return hp;
}

namespace {

const gguf::TensorInfo* need(const gguf::GgufFile& f, const std::string& name, std::vector<int64_t> shape,
                             bool matmul) {
  const gguf::TensorInfo* t = f.find_tensor(name);
  if (!t) fail(f, "missing tensor '" + name + "'");
  bool ok = t->n_dims == int(shape.size());
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = t->ne[i] == shape[i];
  if (!ok) {
    std::string want = "[";
    for (size_t i = 0; i < shape.size(); ++i) want += (i ? ", " : "") + std::to_string(shape[i]);
    fail(f, "tensor '" + name + "' has shape " + t->shape_string() + ", expected " + want + "]");
  }
  if (matmul) {
    if (!is_matmul_type(t->type.type))
      fail(f, "tensor '" + name + "' has type " + t->type.name +
                  ", which ckjit cannot multiply (supported: " + jit::jit_weight_type_names() + ")");
    if (t->ne[0] % t->type.block_elems != 0)
      fail(f, "tensor '" + name + "': rows of " + std::to_string(t->ne[0]) + " are not whole super-blocks");
  } else if (t->type.type != TensorType::F32) {
    fail(f, "tensor '" + name + "' has type " + t->type.name + ", expected F32");
  }
  return t;
}

}  // namespace

ModelTensors find_tensors(const gguf::GgufFile& f, const Hparams& hp) {
  const int64_t E = hp.n_embd, V = hp.n_vocab, F = hp.n_ff, D = hp.head_dim;
  ModelTensors m;
  m.token_embd = need(f, "token_embd.weight", {E, V}, true);
  m.output_norm = need(f, "output_norm.weight", {E}, false);
  m.output = hp.tied_output ? m.token_embd : need(f, "output.weight", {E, V}, true);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    LayerTensors L;
    L.attn_norm = need(f, b + "attn_norm.weight", {E}, false);
    L.wq = need(f, b + "attn_q.weight", {E, hp.q_width()}, true);
    L.wk = need(f, b + "attn_k.weight", {E, hp.kv_width()}, true);
    L.wv = need(f, b + "attn_v.weight", {E, hp.kv_width()}, true);
    L.q_norm = need(f, b + "attn_q_norm.weight", {D}, false);
    L.k_norm = need(f, b + "attn_k_norm.weight", {D}, false);
    L.wo = need(f, b + "attn_output.weight", {hp.q_width(), E}, true);
    L.ffn_norm = need(f, b + "ffn_norm.weight", {E}, false);
    L.gate = need(f, b + "ffn_gate.weight", {E, F}, true);
    L.up = need(f, b + "ffn_up.weight", {E, F}, true);
    L.down = need(f, b + "ffn_down.weight", {F, E}, true);
    m.layers.push_back(L);
  }
  return m;
}

}  // namespace ckjit::graph
