// Writer -> reader round trips: every metadata type, several tensor types and shapes, versions 2
// and 3, alignments, file and memory front-ends, typed getters and their errors.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "gguf_test_files.h"

using namespace gguf_test;

namespace {

std::string error_of(auto&& fn) {
  try {
    fn();
  } catch (const ckjit::Error& e) {
    return e.what();
  }
  return "";
}

template <class T> bool same_bits(T a, T b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// Every scalar type with edge values, strings (empty, embedded NUL, UTF-8), arrays of every type.
GgufWriter all_types_writer() {
  GgufWriter w;
  w.set_u8("t.u8", 255);
  w.set_i8("t.i8", -128);
  w.set_u16("t.u16", 65535);
  w.set_i16("t.i16", -32768);
  w.set_u32("t.u32", 4294967295u);
  w.set_i32("t.i32", std::numeric_limits<int32_t>::min());
  w.set_u64("t.u64", std::numeric_limits<uint64_t>::max());
  w.set_i64("t.i64", std::numeric_limits<int64_t>::min());
  w.set_f32("t.f32", -0.0f);
  w.set_f64("t.f64", 1e-300);
  w.set_f32("t.f32nan", std::numeric_limits<float>::quiet_NaN());
  w.set_bool("t.true", true);
  w.set_bool("t.false", false);
  w.set_string("t.str", std::string_view("a\0b\xc4\xa0z", 6));
  w.set_string("t.empty", "");
  w.set_array<uint8_t>("a.u8", std::vector<uint8_t>{0, 1, 255});
  w.set_array<int8_t>("a.i8", std::vector<int8_t>{-128, 0, 127});
  w.set_array<uint16_t>("a.u16", std::vector<uint16_t>{1, 65535});
  w.set_array<int16_t>("a.i16", std::vector<int16_t>{-32768, 32767});
  w.set_array<uint32_t>("a.u32", std::vector<uint32_t>{0, 4294967295u, 5});
  w.set_array<int32_t>("a.i32", std::vector<int32_t>{24, 20, 20});
  w.set_array<uint64_t>("a.u64", std::vector<uint64_t>{std::numeric_limits<uint64_t>::max()});
  w.set_array<int64_t>("a.i64", std::vector<int64_t>{-1, std::numeric_limits<int64_t>::max()});
  w.set_array<float>("a.f32", std::vector<float>{0.48145466f, 0.4578275f, 0.40821073f});
  w.set_array<double>("a.f64", std::vector<double>{3.141592653589793, -2.5});
  w.set_bool_array("a.bool", {true, false, false, true});
  w.set_string_array("a.str", std::vector<std::string>{"", "x", std::string("\0\n", 2), "\xe4\xbd\xa0"});
  w.set_array<int32_t>("a.empty", std::vector<int32_t>{});
  w.set_string_array("a.strempty", std::vector<std::string>{});
  return w;
}

void check_all_types(const GgufFile& f) {
  CHECK(f.get<uint8_t>("t.u8") == 255);
  CHECK(f.get<int8_t>("t.i8") == -128);
  CHECK(f.get<uint16_t>("t.u16") == 65535);
  CHECK(f.get<int16_t>("t.i16") == -32768);
  CHECK(f.get_u32("t.u32") == 4294967295u);
  CHECK(f.get_i32("t.i32") == std::numeric_limits<int32_t>::min());
  CHECK(f.get_u64("t.u64") == std::numeric_limits<uint64_t>::max());
  CHECK(f.get<int64_t>("t.i64") == std::numeric_limits<int64_t>::min());
  CHECK(same_bits(f.get_f32("t.f32"), -0.0f));
  CHECK(same_bits(f.get<double>("t.f64"), 1e-300));
  CHECK(same_bits(f.get_f32("t.f32nan"), std::numeric_limits<float>::quiet_NaN()));
  CHECK(f.get_bool("t.true") == true);
  CHECK(f.get_bool("t.false") == false);
  CHECK(f.get_string("t.str") == std::string_view("a\0b\xc4\xa0z", 6));
  CHECK(f.get<std::string>("t.empty").empty());

  CHECK(f.get_array<uint8_t>("a.u8") == std::vector<uint8_t>{0, 1, 255});
  CHECK(f.get_array<int8_t>("a.i8") == std::vector<int8_t>{-128, 0, 127});
  CHECK(f.get_array<uint16_t>("a.u16") == std::vector<uint16_t>{1, 65535});
  CHECK(f.get_array<int16_t>("a.i16") == std::vector<int16_t>{-32768, 32767});
  CHECK(f.get_array<uint32_t>("a.u32") == std::vector<uint32_t>{0, 4294967295u, 5});
  CHECK(f.get_array<int32_t>("a.i32") == std::vector<int32_t>{24, 20, 20});
  CHECK(f.get_array<uint64_t>("a.u64") == std::vector<uint64_t>{std::numeric_limits<uint64_t>::max()});
  CHECK(f.get_array<int64_t>("a.i64") == std::vector<int64_t>{-1, std::numeric_limits<int64_t>::max()});
  CHECK(f.get_array<float>("a.f32") == std::vector<float>{0.48145466f, 0.4578275f, 0.40821073f});
  CHECK(f.get_array<double>("a.f64") == std::vector<double>{3.141592653589793, -2.5});
  CHECK(f.get_array<bool>("a.bool") == std::vector<bool>{true, false, false, true});
  const auto& strs = f.get_string_array("a.str");
  REQUIRE(strs.size() == 4);
  CHECK(strs[0].empty());
  CHECK(strs[1] == "x");
  CHECK(strs[2] == std::string_view("\0\n", 2));
  CHECK(strs[3] == "\xe4\xbd\xa0");
  CHECK(f.get_array<int32_t>("a.empty").empty());
  CHECK(f.get_string_array("a.strempty").empty());
  CHECK(f.get_array_view("a.i32").count == 3);
  CHECK(f.get_array_view("a.i32").elem == ValueType::I32);
}

}  // namespace

TEST_SUITE("gguf") {

TEST_CASE("gguf round trip: every metadata type in versions 2 and 3") {
  for (uint32_t version : {2u, 3u}) {
    CAPTURE(version);
    GgufWriter w = all_types_writer();
    w.set_version(version);
    std::vector<uint8_t> bytes = w.to_bytes();
    CHECK(bytes.size() % 32 == 0);  // metadata padded to the alignment even without tensors (as llama.cpp)
    GgufFile f = GgufFile::from_bytes(std::move(bytes), "all_types.gguf");
    CHECK(f.version() == version);
    CHECK(f.alignment() == 32);
    CHECK(f.tensors().empty());
    REQUIRE(f.metadata().size() == 29);
    CHECK(f.metadata().front().key == "t.u8");  // file order is kept
    CHECK(f.metadata().back().key == "a.strempty");
    check_all_types(f);
  }
}

TEST_CASE("gguf round trip: tensors of several types and shapes through a file (mmap)") {
  for (uint32_t alignment : {32u, 64u, 256u}) {
    CAPTURE(alignment);
    GgufWriter w;
    w.set_alignment(alignment);
    struct Spec {
      const char* name;
      TensorType type;
      std::vector<int64_t> ne;
      size_t bytes;
    };
    std::vector<Spec> specs = {
        {"scalar", TensorType::F32, {}, 4},
        {"vec.f32", TensorType::F32, {3}, 12},
        {"mat.f16", TensorType::F16, {5, 3}, 30},
        {"mat.bf16", TensorType::BF16, {7, 2, 1, 2}, 56},
        {"q8_0", TensorType::Q8_0, {64, 3}, 2 * 3 * 34},
        {"q4_0", TensorType::Q4_0, {32, 1, 2}, 2 * 18},
        {"q4_1", TensorType::Q4_1, {32}, 20},
        {"q5_0", TensorType::Q5_0, {96}, 3 * 22},
        {"q5_1", TensorType::Q5_1, {32, 2}, 2 * 24},
        {"blk.0.ffn_down.weight", TensorType::Q4_K, {512, 3}, 2 * 3 * 144},
        {"q5_k", TensorType::Q5_K, {256, 2}, 2 * 176},
        {"q6_k", TensorType::Q6_K, {256, 1, 3}, 3 * 210},
        {"q2_k", TensorType::Q2_K, {256}, 84},
        {"q3_k", TensorType::Q3_K, {256}, 110},
        {"ints", TensorType::I32, {4, 4}, 64},
        {"i8", TensorType::I8, {3}, 3},
        {"i16", TensorType::I16, {3}, 6},
        {"i64", TensorType::I64, {2}, 16},
        {"f64", TensorType::F64, {2}, 16},
        {"empty", TensorType::F32, {0, 4}, 0},
    };
    for (size_t i = 0; i < specs.size(); ++i) {
      w.add_tensor(specs[i].name, specs[i].type, specs[i].ne, pattern_bytes(specs[i].bytes, uint8_t(i)));
    }
    w.set_string("general.architecture", "qwen3vl");
    auto path = (scratch_dir() / ("tensors_" + std::to_string(alignment) + ".gguf")).string();
    w.write_file(path);

    GgufFile f = GgufFile::open(path);
    CHECK(f.name() == path);
    std::vector<uint8_t> in_memory = w.to_bytes();  // the streamed file has the same bytes
    REQUIRE(f.file_size() == in_memory.size());
    CHECK(std::memcmp(f.bytes(), in_memory.data(), in_memory.size()) == 0);
    CHECK(f.alignment() == alignment);
    CHECK(f.data_offset() % alignment == 0);
    CHECK(f.get_string("general.architecture") == "qwen3vl");
    REQUIRE(f.tensors().size() == specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      const Spec& s = specs[i];
      CAPTURE(s.name);
      const TensorInfo& t = f.tensor(s.name);
      CHECK(&t == &f.tensors()[i]);
      CHECK(t.type.type == s.type);
      CHECK(t.n_dims == int(s.ne.size()));
      for (int k = 0; k < 4; ++k) CHECK(t.ne[k] == (k < int(s.ne.size()) ? s.ne[k] : 1));
      CHECK(t.n_bytes == s.bytes);
      CHECK(t.row_bytes() * uint64_t(t.n_rows()) == s.bytes);
      CHECK(t.offset % alignment == 0);
      CHECK(size_t(t.data - f.bytes()) % alignment == 0);
      CHECK(std::vector<uint8_t>(t.data, t.data + s.bytes) == pattern_bytes(s.bytes, uint8_t(i)));
    }
    CHECK(f.tensor("mat.f16").shape_string() == "[5, 3]");
    CHECK(f.tensor("blk.0.ffn_down.weight").row_bytes() == 2 * 144);
    CHECK(f.tensor("blk.0.ffn_down.weight").n_rows() == 3);
    CHECK(f.tensor("scalar").shape_string() == "[]");
    CHECK(f.tensor("scalar").n_elements == 1);
    CHECK(f.tensor("empty").n_elements == 0);
    CHECK(f.find_tensor("nope") == nullptr);
  }
}

TEST_CASE("gguf typed getters: missing keys and wrong types and optional variants") {
  GgufFile f = GgufFile::from_bytes(all_types_writer().to_bytes(), "getters.gguf");
  CHECK(f.get_optional<uint32_t>("t.u32") == 4294967295u);
  CHECK_FALSE(f.get_optional<uint32_t>("qwen3vl.block_count").has_value());
  CHECK_FALSE(f.get_optional<std::string_view>("nope").has_value());

  std::string e = error_of([&] { f.get_u32("qwen3vl.block_count"); });
  CHECK(e.find("getters.gguf") != std::string::npos);
  CHECK(e.find("qwen3vl.block_count") != std::string::npos);
  CHECK(e.find("missing") != std::string::npos);

  e = error_of([&] { f.get_i32("t.u32"); });  // exact types, like llama.cpp
  CHECK(e.find("\"t.u32\" has type u32, expected i32") != std::string::npos);
  CHECK_THROWS_AS(f.get_optional<int32_t>("t.u32"), ckjit::Error);
  CHECK_THROWS_AS(f.get_string("t.u8"), ckjit::Error);
  CHECK_THROWS_AS(f.get_u32("a.u32"), ckjit::Error);

  e = error_of([&] { f.get_array<float>("a.i32"); });
  CHECK(e.find("array[i32], expected array[f32]") != std::string::npos);
  CHECK_THROWS_AS(f.get_string_array("a.i32"), ckjit::Error);
  CHECK_THROWS_AS(f.get_array<int32_t>("t.i32"), ckjit::Error);
  CHECK_THROWS_AS(f.get_array_view("t.str"), ckjit::Error);
  e = error_of([&] { f.tensor("token_embd.weight"); });
  CHECK(e.find("token_embd.weight") != std::string::npos);
}

TEST_CASE("gguf display strings abbreviate long arrays") {
  GgufWriter w;
  std::vector<std::string> vocab;
  for (int i = 0; i < 1000; ++i) vocab.push_back(i == 1 ? "\"" : std::string(1, char('!' + i % 90)));
  w.set_string_array("tokenizer.ggml.tokens", vocab);
  w.set_array<int32_t>("sections", std::vector<int32_t>{24, 20, 20, 0});
  w.set_string("s", "a\x01" "b");
  GgufFile f = GgufFile::from_bytes(w.to_bytes(), "display.gguf");
  CHECK(to_display_string(f.value("tokenizer.ggml.tokens"), 2) == "[1000 strings: \"!\", \"\\\"\", ... ]");
  CHECK(to_display_string(f.value("sections")) == "[24, 20, 20, 0]");
  CHECK(to_display_string(f.value("s")) == "\"a\\x01b\"");
  CHECK(describe_type(f.value("sections")) == "array[i32]");
}

TEST_CASE("gguf writer rejects what the reader would reject") {
  GgufWriter w;
  w.set_u32("k", 1);
  CHECK_THROWS_AS(w.set_u32("k", 2), ckjit::Error);
  CHECK_THROWS_AS(w.set_string("", "x"), ckjit::Error);
  CHECK_THROWS_AS(w.set_alignment(48), ckjit::Error);
  CHECK_THROWS_AS(w.set_i32("general.alignment", 32), ckjit::Error);
  CHECK_THROWS_AS(w.set_version(1), ckjit::Error);
  CHECK_THROWS_AS(w.add_tensor(std::string(64, 'x'), TensorType::F32, {1}, pattern_bytes(4, 0)), ckjit::Error);
  CHECK_THROWS_AS(w.add_tensor("q", TensorType::Q8_0, {33}, pattern_bytes(34, 0)), ckjit::Error);
  CHECK_THROWS_AS(w.add_tensor("q", TensorType::Q8_K, {256}, pattern_bytes(292, 0)), ckjit::Error);
  CHECK_THROWS_AS(w.add_tensor("q", TensorType::F32, {2}, pattern_bytes(4, 0)), ckjit::Error);
  CHECK_THROWS_AS(w.add_tensor("q", TensorType::F32, {1, 1, 1, 1, 1}, pattern_bytes(4, 0)), ckjit::Error);
  w.add_tensor("q", TensorType::F32, {1}, pattern_bytes(4, 0));
  CHECK_THROWS_AS(w.add_tensor("q", TensorType::F32, {1}, pattern_bytes(4, 0)), ckjit::Error);
  CHECK_THROWS_AS(w.write_file((scratch_dir() / "no_such_dir" / "x.gguf").string()), ckjit::Error);
}

TEST_CASE("gguf realistic vocabulary: 151936 tokens and merges read as views") {
  GgufWriter w;
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> token_type;
  for (int i = 0; i < 151936; ++i) {
    tokens.push_back("tok" + std::to_string(i));
    token_type.push_back(i < 151643 ? 1 : 3);
  }
  for (int i = 0; i < 151387; ++i) merges.push_back("m" + std::to_string(i) + " x");
  w.set_string("general.architecture", "qwen3vl");
  w.set_u32("qwen3vl.block_count", 28);
  w.set_array<int32_t>("qwen3vl.rope.dimension_sections", std::vector<int32_t>{24, 20, 20, 0});
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_array<int32_t>("tokenizer.ggml.token_type", token_type);
  w.set_string_array("tokenizer.ggml.merges", merges);
  w.add_tensor("token_embd.weight", TensorType::Q8_0, {64, 151936}, std::vector<uint8_t>(2 * 34 * 151936, 7));
  auto path = (scratch_dir() / "vocab.gguf").string();
  w.write_file(path);

  GgufFile f = GgufFile::open(path);
  const auto& toks = f.get_string_array("tokenizer.ggml.tokens");
  REQUIRE(toks.size() == 151936);
  CHECK(toks[151935] == "tok151935");
  // Views point into the mapping, not into copies.
  CHECK(reinterpret_cast<const uint8_t*>(toks[0].data()) >= f.bytes());
  CHECK(reinterpret_cast<const uint8_t*>(toks[0].data()) < f.bytes() + f.file_size());
  CHECK(f.get_string_array("tokenizer.ggml.merges")[151386] == "m151386 x");
  CHECK(f.get_array<int32_t>("tokenizer.ggml.token_type")[151643] == 3);
  CHECK(f.get_u32("qwen3vl.block_count") == 28);
  CHECK(f.tensor("token_embd.weight").ne[1] == 151936);
  CHECK(f.tensor("token_embd.weight").data[0] == 7);
}

}  // TEST_SUITE
