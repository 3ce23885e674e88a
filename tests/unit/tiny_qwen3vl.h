#pragma once
// Writes small random Qwen3-VL text GGUFs for the decoder tests (the real synthesizer is
// `ckjit synth`; these are tiny and fully controlled: any shape, any weight type per role,
// tied or untied output, optional real Qwen3 tokenizer).
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <map>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_writer.h"
#include "runtime/quants/quants.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/unit/fixture_cache.h"

namespace tinymodel {

struct Spec {
  int64_t n_embd = 256, n_layer = 2, n_ff = 512, n_head = 4, n_head_kv = 2, head_dim = 64, n_vocab = 512;
  bool tied = true;
  ckjit::TensorType wtype = ckjit::TensorType::Q4_K;   // attn_q/k/output, ffn_gate/up
  ckjit::TensorType v_type = ckjit::TensorType::Q6_K;  // attn_v, ffn_down
  std::optional<ckjit::TensorType> up_type;            // ffn_up when it differs from wtype
  ckjit::TensorType embd_type = ckjit::TensorType::Q6_K;
  ckjit::TensorType out_type = ckjit::TensorType::Q6_K;
  std::string arch = "qwen3vl";
  uint32_t seed = 1;
  uint32_t n_deepstack = 0;  // llama.cpp b10256 asserts in the text graph with deepstack > 0 on text-only input
  float weight_scale = 0.08f;
  const ckjit::tok::TokenizerVocab* vocab = nullptr;  // n_vocab must then be >= its size
  std::vector<std::string> skip_tensors;               // for bad-input tests
  std::map<std::string, std::vector<int64_t>> reshape;  // name -> wrong shape (for bad-input tests)
};

inline std::vector<uint8_t> quantized(ckjit::TensorType t, const std::vector<float>& x, int64_t row) {
  const auto& ti = ckjit::tensor_type_info(t);
  std::vector<uint8_t> out(size_t(int64_t(x.size()) / ti.block_elems * ti.block_bytes));
  const int64_t rb = row / ti.block_elems * ti.block_bytes;
  for (int64_t r = 0; r < int64_t(x.size()) / row; ++r) ckjit::quant::quantize_row(t, x.data() + r * row, out.data() + r * rb, row);
  return out;
}

inline ckjit::gguf::GgufWriter build(const Spec& s) {
  using ckjit::TensorType;
  ckjit::gguf::GgufWriter w;
  const std::string a = s.arch;
  w.set_string("general.architecture", a);
  w.set_u32(a + ".context_length", 4096);
  w.set_u32(a + ".embedding_length", uint32_t(s.n_embd));
  w.set_u32(a + ".block_count", uint32_t(s.n_layer));
  w.set_u32(a + ".feed_forward_length", uint32_t(s.n_ff));
  w.set_u32(a + ".attention.head_count", uint32_t(s.n_head));
  w.set_u32(a + ".attention.head_count_kv", uint32_t(s.n_head_kv));
  w.set_u32(a + ".attention.key_length", uint32_t(s.head_dim));
  w.set_u32(a + ".attention.value_length", uint32_t(s.head_dim));
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", 1e-6f);
  w.set_f32(a + ".rope.freq_base", 5000000.0f);
  // Sections in the proportions of the real [24, 20, 20, 0] over 64 pairs.
  const int32_t half = int32_t(s.head_dim / 2);
  std::vector<int32_t> sections = {half * 24 / 64, half * 20 / 64, half * 20 / 64, 0};
  w.set_array<int32_t>(a + ".rope.dimension_sections", sections);
  w.set_u32(a + ".n_deepstack_layers", s.n_deepstack);
  if (s.vocab) {
    const auto& v = *s.vocab;
    w.set_string("tokenizer.ggml.model", v.model);
    w.set_string("tokenizer.ggml.pre", v.pre);
    std::vector<std::string> toks = v.tokens;
    std::vector<int32_t> types = v.token_types;
    while (int64_t(toks.size()) < s.n_vocab) {
      toks.push_back("[PAD" + std::to_string(toks.size()) + "]");
      types.push_back(int32_t(ckjit::tok::TokenType::UserDefined));
    }
    w.set_string_array("tokenizer.ggml.tokens", std::span<const std::string>(toks));
    if (!types.empty()) w.set_array<int32_t>("tokenizer.ggml.token_type", types);
    w.set_string_array("tokenizer.ggml.merges", std::span<const std::string>(v.merges));
    if (v.bos_id >= 0) w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos_id));
    if (v.eos_id >= 0) w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos_id));
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    w.set_string("tokenizer.chat_template",
                 "{% for message in messages %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
                 "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}");
  }
  std::mt19937 rng(s.seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  auto skip = [&](const std::string& n) {
    for (auto& x : s.skip_tensors) if (x == n) return true;
    return false;
  };
  auto shape_of = [&](const std::string& n, std::vector<int64_t> ne) {
    auto it = s.reshape.find(n);
    return it == s.reshape.end() ? ne : it->second;
  };
  auto mat = [&](const std::string& n, TensorType t, int64_t k, int64_t rows, float scale) {
    std::vector<int64_t> ne = shape_of(n, {k, rows});
    int64_t count = 1;
    for (auto e : ne) count *= e;
    std::vector<float> x(static_cast<size_t>(count));
    for (auto& f : x) f = nd(rng) * scale;
    if (skip(n)) return;
    w.add_tensor(n, t, ne, quantized(t, x, ne[0]));
  };
  auto vec = [&](const std::string& n, int64_t len) {
    std::vector<int64_t> ne = shape_of(n, {len});
    std::vector<float> x(static_cast<size_t>(ne[0]));
    for (auto& f : x) f = 1.0f + 0.1f * nd(rng);
    if (skip(n)) return;
    std::vector<uint8_t> b(x.size() * 4);
    std::memcpy(b.data(), x.data(), b.size());
    w.add_tensor(n, TensorType::F32, ne, b);
  };
  const int64_t E = s.n_embd, Q = s.n_head * s.head_dim, KV = s.n_head_kv * s.head_dim;
  mat("token_embd.weight", s.embd_type, E, s.n_vocab, 1.0f);
  vec("output_norm.weight", E);
  if (!s.tied) mat("output.weight", s.out_type, E, s.n_vocab, 0.5f);
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    vec(b + "attn_norm.weight", E);
    mat(b + "attn_q.weight", s.wtype, E, Q, s.weight_scale);
    mat(b + "attn_k.weight", s.wtype, E, KV, s.weight_scale);
    mat(b + "attn_v.weight", s.v_type, E, KV, s.weight_scale);
    vec(b + "attn_q_norm.weight", s.head_dim);
    vec(b + "attn_k_norm.weight", s.head_dim);
    mat(b + "attn_output.weight", s.wtype, Q, E, s.weight_scale);
    vec(b + "ffn_norm.weight", E);
    mat(b + "ffn_gate.weight", s.wtype, E, s.n_ff, s.weight_scale);
    mat(b + "ffn_up.weight", s.up_type.value_or(s.wtype), E, s.n_ff, s.weight_scale);
    mat(b + "ffn_down.weight", s.v_type, s.n_ff, E, s.weight_scale);
  }
  return w;
}

// Everything build(s) depends on, as a file name for fixture_cache (the vocabulary by a hash of its
// contents).
inline std::string cache_key(const Spec& s) {
  std::string k = s.arch + "-" + std::to_string(s.n_embd) + "-" + std::to_string(s.n_layer) + "-" + std::to_string(s.n_ff) +
                  "-" + std::to_string(s.n_head) + "-" + std::to_string(s.n_head_kv) + "-" + std::to_string(s.head_dim) +
                  "-" + std::to_string(s.n_vocab) + "-" + std::to_string(s.tied) + "-" + std::to_string(int(s.wtype)) +
                  "-" + std::to_string(int(s.v_type)) + "-" + std::to_string(s.up_type ? int(*s.up_type) : -1) + "-" +
                  std::to_string(int(s.embd_type)) + "-" + std::to_string(int(s.out_type)) + "-" + std::to_string(s.seed) +
                  "-" + std::to_string(s.n_deepstack) + "-" + fixture_cache::hex(std::bit_cast<uint32_t>(s.weight_scale));
  uint64_t h = fixture_cache::fnv1a(k);
  for (const auto& t : s.skip_tensors) h = fixture_cache::fnv1a(t + ";", h);
  for (const auto& [n, ne] : s.reshape) {
    h = fixture_cache::fnv1a(n + ":", h);
    for (int64_t e : ne) h = fixture_cache::fnv1a(std::to_string(e) + ",", h);
  }
  if (s.vocab) {
    const auto& v = *s.vocab;
    h = fixture_cache::fnv1a(v.model + "|" + v.pre + "|" + std::to_string(v.bos_id) + "|" + std::to_string(v.eos_id), h);
    for (const auto& t : v.tokens) h = fixture_cache::fnv1a(t.data(), t.size() + 1, h);
    h = fixture_cache::fnv1a(v.token_types.data(), v.token_types.size() * sizeof(v.token_types[0]), h);
    for (const auto& m : v.merges) h = fixture_cache::fnv1a(m.data(), m.size() + 1, h);
  }
  return "tinymodel-" + fixture_cache::hex(h) + ".gguf";
}

// build(s) written once per test binary (fixture_cache.h): its path.
inline std::filesystem::path cached_file(const Spec& s) {
  return fixture_cache::file(cache_key(s), [&](const std::filesystem::path& p) { build(s).write_file(p.string()); });
}

// build(s)'s bytes, from the cache.
inline std::vector<uint8_t> bytes(const Spec& s) {
  // One read of the whole file: byte iterators cost seconds per model in the -O0 test code under ASan.
  const std::filesystem::path p = cached_file(s);
  std::vector<uint8_t> b(size_t(std::filesystem::file_size(p)));
  std::ifstream in(p, std::ios::binary);
  in.read(reinterpret_cast<char*>(b.data()), std::streamsize(b.size()));
  if (!in) throw std::runtime_error("cannot read " + p.string());
  return b;
}

// build(s) written to `path` (a copy of the cached file).
inline void write_file(const Spec& s, const std::string& path) {
  std::filesystem::copy_file(cached_file(s), path, std::filesystem::copy_options::overwrite_existing);
}

}  // namespace tinymodel
