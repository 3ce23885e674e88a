// Hostile GGUF files: each is a valid file with bytes corrupted (or a file built field by field),
// and each must be rejected with a ckjit::Error that names the file and says what is wrong —
// never a crash, never another exception type. Runs under ASan+UBSan in the Sanitize build.
#include <doctest/doctest.h>

#include <array>
#include <fstream>
#include <set>
#include <limits>
#include <random>

#include "gguf_test_files.h"

using namespace gguf_test;

namespace {

struct HostileCase {
  std::string name;
  std::vector<uint8_t> bytes;
  std::string expect;  // a fragment the error message must contain
};

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();

// A file built field by field: header, then whatever the case appends.
std::vector<uint8_t> raw_header(uint32_t version, int64_t n_tensors, int64_t n_kv) {
  std::vector<uint8_t> b;
  put_bytes(b, "GGUF", 4);
  put(b, version);
  put(b, n_tensors);
  put(b, n_kv);
  return b;
}

std::vector<HostileCase> hostile_cases() {
  const Layout L(base_writer().to_bytes());
  const std::vector<uint8_t>& B = L.bytes;
  std::vector<HostileCase> c;
  auto add = [&](std::string name, std::vector<uint8_t> bytes, std::string expect) {
    c.push_back({std::move(name), std::move(bytes), std::move(expect)});
  };

  // Header.
  add("empty", {}, "too short for the magic");
  add("three_bytes", {'G', 'G', 'U'}, "too short for the magic");
  add("bad_magic", patched(B, 0, std::array<char, 4>{'G', 'G', 'M', 'L'}), "bad magic");
  add("zero_magic", patched(B, 0, uint32_t(0)), "bad magic");
  add("version_0", patched(B, 4, uint32_t(0)), "invalid GGUF version 0");
  add("version_1", patched(B, 4, uint32_t(1)), "version 1");
  add("version_4", patched(B, 4, uint32_t(4)), "unsupported GGUF version 4");
  add("version_huge", patched(B, 4, uint32_t(0xFFFFFFFF)), "unsupported GGUF version");
  add("version_byteswapped", patched(B, 4, uint32_t(0x03000000)), "big-endian");
  add("header_only_magic_version", truncated(B, 8), "tensor count");
  add("negative_tensor_count", patched(B, 8, int64_t(-1)), "negative tensor count");
  add("negative_kv_count", patched(B, 16, int64_t(-5)), "negative metadata count");
  add("huge_kv_count", patched(B, 16, int64_t(1) << 62), "cannot fit");
  add("max_kv_count", patched(B, 16, kI64Max), "cannot fit");
  add("huge_tensor_count", patched(B, 8, int64_t(1) << 40), "cannot fit");
  add("max_both_counts", patched(patched(B, 8, kI64Max), 16, kI64Max), "cannot fit");
  // Miscounted records: the parser then reads other bytes as records and must still stop cleanly.
  add("kv_count_plus_one", patched(B, 16, int64_t(L.file.metadata().size() + 1)), "");
  add("kv_count_minus_one", patched(B, 16, int64_t(L.file.metadata().size() - 1)), "");
  add("tensor_count_plus_one", patched(B, 8, int64_t(4)), "");
  add("tensor_count_plus_many", patched(B, 8, int64_t(9)), "");

  // Keys and values.
  const uint64_t k_u32 = L.kv("test.u32");
  add("key_length_huge", patched(B, k_u32, uint64_t(1) << 63), "metadata key length");
  add("key_length_past_end", patched(B, k_u32, uint64_t(B.size())), "exceeds the");
  add("key_length_over_limit", patched(B, k_u32, uint64_t(70000)), "exceeds the limit");
  add("key_empty", patched(B, k_u32, uint64_t(0)), "empty metadata key");
  add("key_duplicate", patched(B, L.kv("test.str") + 8, std::array<char, 8>{'t', 'e', 's', 't', '.', 'u', '3', '2'}),
      "duplicate metadata key \"test.u32\"");
  add("value_type_13", patched(B, L.kv_type("test.u32"), int32_t(13)), "unknown value type 13");
  add("value_type_negative", patched(B, L.kv_type("test.u32"), int32_t(-1)), "unknown value type -1");
  add("value_type_huge", patched(B, L.kv_type("test.u32"), int32_t(0x7FFFFFFF)), "unknown value type");
  add("bool_value_2", patched(B, L.kv_value("test.flag"), uint8_t(2)), "neither 0 nor 1");
  add("string_length_huge", patched(B, L.kv_value("test.str"), uint64_t(1) << 62), "exceeds the limit");
  add("string_length_past_end", patched(B, L.kv_value("test.str"), uint64_t(B.size() - L.kv_value("test.str"))),
      "exceeds the");
  add("array_nested", patched(B, L.array_elem_type("test.ints"), int32_t(ValueType::ARRAY)), "nested arrays");
  add("array_elem_type_99", patched(B, L.array_elem_type("test.ints"), int32_t(99)), "unknown element type 99");
  add("array_elem_type_negative", patched(B, L.array_elem_type("test.ints"), int32_t(-7)), "unknown element type -7");
  add("array_count_huge", patched(B, L.array_count("test.ints"), uint64_t(1) << 40), "the limit is");
  add("array_count_max", patched(B, L.array_count("test.ints"), std::numeric_limits<uint64_t>::max()), "the limit is");
  add("array_count_past_end", patched(B, L.array_count("test.ints"), uint64_t(B.size() / 4)), "needs at least");
  add("string_array_count_past_end", patched(B, L.array_count("test.tokens"), uint64_t(B.size() / 8)),
      "needs at least");
  add("string_array_count_too_big", patched(B, L.array_count("test.tokens"), uint64_t(30)), "");
  add("string_array_element_length_huge", patched(B, L.array_data("test.tokens") + 8 + 1, uint64_t(1) << 50),
      "string element");
  add("string_array_element_past_end", patched(B, L.array_data("test.tokens") + 8 + 1, uint64_t(B.size())),
      "exceeds the");
  add("bool_array_element_7", patched(B, L.array_data("test.flags") + 1, uint8_t(7)), "bool element 1");
  add("alignment_type_i32", patched(B, L.kv_type("general.alignment"), int32_t(ValueType::I32)),
      "general.alignment must be of type u32");
  add("alignment_type_f32", patched(B, L.kv_type("general.alignment"), int32_t(ValueType::F32)),
      "general.alignment must be of type u32");
  add("alignment_zero", patched(B, L.kv_value("general.alignment"), uint32_t(0)), "not a non-zero power of two");
  add("alignment_48", patched(B, L.kv_value("general.alignment"), uint32_t(48)), "not a non-zero power of two");
  add("alignment_max", patched(B, L.kv_value("general.alignment"), uint32_t(0xFFFFFFFF)), "power of two");

  // Tensor infos.
  add("tensor_name_empty", patched(B, L.tensor("b"), uint64_t(0)), "empty tensor name");
  add("tensor_name_64_bytes", patched(B, L.tensor("b"), uint64_t(64)), "at most 63");
  add("tensor_name_huge", patched(B, L.tensor("b"), uint64_t(1) << 62), "tensor name length");
  add("tensor_name_duplicate", patched(B, L.tensor("b") + 8, 'a'), "duplicate tensor name \"a\"");
  add("tensor_n_dims_5", patched(B, L.tensor_n_dims("b"), uint32_t(5)), "5 dimensions");
  add("tensor_n_dims_huge", patched(B, L.tensor_n_dims("b"), uint32_t(0xFFFFFFFF)), "dimensions; at most 4");
  add("tensor_dim_negative", patched(B, L.tensor_ne("b", 1), int64_t(-2)), "negative dimension ne[1]");
  add("tensor_dim_min", patched(B, L.tensor_ne("a", 0), std::numeric_limits<int64_t>::min()), "negative dimension");
  add("tensor_elements_overflow",
      patched(patched(B, L.tensor_ne("b", 0), int64_t(1) << 40), L.tensor_ne("b", 1), int64_t(1) << 40), "overflow");
  add("tensor_bytes_overflow", patched(B, L.tensor_ne("a", 0), int64_t(1) << 62), "overflows");
  add("tensor_type_removed_4", patched(B, L.tensor_type("a"), int32_t(4)), "unknown or unsupported tensor type id 4");
  add("tensor_type_99", patched(B, L.tensor_type("a"), int32_t(99)), "tensor type id 99");
  add("tensor_type_negative", patched(B, L.tensor_type("a"), int32_t(-1)), "tensor type id -1");
  add("tensor_type_iq_unsupported", patched(B, L.tensor_type("b"), int32_t(20)), "tensor type id 20");
  add("tensor_type_q8_k", patched(B, L.tensor_type("a"), int32_t(TensorType::Q8_K)), "activation-only");
  add("tensor_type_q8_1", patched(B, L.tensor_type("b"), int32_t(TensorType::Q8_1)), "activation-only");
  add("tensor_ne0_not_block_multiple", patched(B, L.tensor_ne("b", 0), int64_t(33)), "not a multiple of the block size 32");
  add("tensor_type_k_quant_short_row", patched(B, L.tensor_type("b"), int32_t(TensorType::Q4_K)), "block size 256");
  add("tensor_offset_misaligned", patched(B, L.tensor_offset("b"), uint64_t(33)), "not a multiple of the alignment");
  add("tensor_offset_misaligned_8", patched(B, L.tensor_offset("c"), uint64_t(8)), "not a multiple of the alignment");
  add("tensor_offset_overlap", patched(B, L.tensor_offset("b"), uint64_t(0)), "expected 32");
  add("tensor_offset_overlap_last", patched(B, L.tensor_offset("c"), uint64_t(96)), "expected 128");
  add("tensor_offset_gap", patched(B, L.tensor_offset("c"), uint64_t(160)), "expected 128");
  add("tensor_offsets_swapped", patched(patched(B, L.tensor_offset("a"), uint64_t(32)), L.tensor_offset("b"), uint64_t(0)),
      "expected 0");
  add("tensor_offset_huge", patched(B, L.tensor_offset("c"), uint64_t(1) << 63), "expected 128");
  add("tensor_data_past_end", patched(B, L.tensor_ne("c", 1), int64_t(3)), "past the end of the file");
  add("tensor_data_huge", patched(B, L.tensor_ne("c", 1), int64_t(1) << 40), "past the end of the file");
  add("file_cut_last_byte", truncated(B, B.size() - 1), "past the end of the file");
  add("file_cut_before_data", truncated(B, L.file.data_offset() - 1), "data section should start");
  add("file_cut_after_infos", truncated(B, L.end_of_infos()), "data section should start");

  // Built field by field.
  {
    auto b = raw_header(3, 0, 1);
    put_string(b, std::string(65536, 'k'));
    put(b, int32_t(ValueType::U8));
    b.push_back(1);
    add("raw_key_65536_bytes", b, "exceeds the limit of 65535");
  }
  {
    auto b = raw_header(3, 1, 0);
    put_string(b, "t");
    put(b, uint32_t(1));
    put(b, int64_t(4));
    put(b, int32_t(TensorType::F32));
    put(b, uint64_t(0));
    add("raw_tensor_without_data", b, "data section should start");
    b.resize(64 + 8);  // infos padded to 64, then half of the 16 data bytes
    add("raw_tensor_half_data", b, "past the end of the file");
  }
  {
    auto b = raw_header(2, 0, 1);
    put_string(b, "arr");
    put(b, int32_t(ValueType::ARRAY));
    put(b, int32_t(ValueType::STRING));
    put(b, uint64_t(1) << 29);  // under the element limit, over the bytes left
    for (int i = 0; i < 4; ++i) put_string(b, "x");
    add("raw_string_array_claims_2e29", b, "needs at least");
  }
  {
    auto b = raw_header(3, 0, 2);
    for (int i = 0; i < 2; ++i) {
      put_string(b, "general.alignment");
      put(b, int32_t(ValueType::U32));
      put(b, uint32_t(32));
    }
    add("raw_duplicate_alignment", b, "duplicate metadata key \"general.alignment\"");
  }
  {
    // Tensor data offsets computed with alignment 32 while the file says 64.
    GgufWriter w;
    w.set_alignment(64);
    w.add_tensor("x", TensorType::F32, {8}, pattern_bytes(32, 0));
    w.add_tensor("y", TensorType::F32, {8}, pattern_bytes(32, 0));
    Layout l64(w.to_bytes());
    add("raw_offset_not_multiple_of_64", patched(l64.bytes, l64.tensor_offset("y"), uint64_t(32)), "alignment 64");
  }
  return c;
}

}  // namespace

TEST_SUITE("gguf") {

TEST_CASE("gguf base file of the hostile tests is valid") {
  Layout L(base_writer().to_bytes());
  CHECK(L.file.tensors().size() == 3);
  CHECK(L.file.data_offset() + 32 + 96 + 64 == L.bytes.size());  // last tensor ends at the end
  CHECK(L.file.get_string_array("test.tokens")[2] == "def");
  // Version 2 has the same layout.
  CHECK(GgufFile::from_bytes(patched(L.bytes, 4, uint32_t(2)), "v2.gguf").version() == 2);
  // Extra bytes after the last tensor are not an error (only tensor bytes must be in the file).
  auto longer = L.bytes;
  longer.resize(longer.size() + 100, 0);
  CHECK(GgufFile::from_bytes(longer, "longer.gguf").tensors().size() == 3);
  // A header-only file (no keys, no tensors) is valid.
  CHECK(GgufFile::from_bytes(raw_header(3, 0, 0), "header.gguf").metadata().empty());
}

TEST_CASE("gguf hostile files: each is rejected with a ckjit::Error naming file and offset and problem") {
  auto cases = hostile_cases();
  CHECK(cases.size() >= 30);
  std::set<std::string> names;
  for (const auto& hc : cases) {
    CAPTURE(hc.name);
    CHECK(names.insert(hc.name).second);
    std::string file_name = "hostile_" + hc.name + ".gguf";
    std::string msg;
    try {
      GgufFile::from_bytes(hc.bytes, file_name);
    } catch (const ckjit::Error& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    REQUIRE_FALSE(msg.empty());
    CHECK(msg.rfind(file_name + ": at byte ", 0) == 0);
    CHECK(msg.find(hc.expect) != std::string::npos);
  }
}

TEST_CASE("gguf hostile files through the file front-end (mmap)") {
  auto dir = scratch_dir() / "hostile";
  std::filesystem::create_directories(dir);
  for (const auto& hc : hostile_cases()) {
    CAPTURE(hc.name);
    auto path = (dir / (hc.name + ".gguf")).string();
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(hc.bytes.data()), std::streamsize(hc.bytes.size()));
    std::string msg;
    try {
      GgufFile::open(path);
    } catch (const ckjit::Error& e) {
      msg = e.what();
    }
    REQUIRE_FALSE(msg.empty());
    CHECK(msg.find(path) != std::string::npos);
  }
}

TEST_CASE("gguf truncation at every byte of a small file is rejected") {
  const std::vector<uint8_t> full = base_writer().to_bytes();
  for (size_t n = 0; n < full.size(); ++n) {
    CAPTURE(n);
    std::vector<uint8_t> cut(full.begin(), full.begin() + std::ptrdiff_t(n));
    std::string msg;
    try {
      GgufFile::from_bytes(std::move(cut), "cut.gguf");
    } catch (const ckjit::Error& e) {
      msg = e.what();
    }
    REQUIRE_FALSE(msg.empty());
    CHECK(msg.rfind("cut.gguf: at byte ", 0) == 0);
  }
}

TEST_CASE("gguf paths that are not GGUF files (missing or directory or empty)") {
  auto dir = scratch_dir();
  auto missing = (dir / "does_not_exist.gguf").string();
  std::string msg;
  try { GgufFile::open(missing); } catch (const ckjit::Error& e) { msg = e.what(); }
  CHECK(msg.find(missing) != std::string::npos);
  CHECK(msg.find("cannot open") != std::string::npos);

  msg.clear();
  try { GgufFile::open(dir.string()); } catch (const ckjit::Error& e) { msg = e.what(); }
  CHECK(msg.find("is a directory") != std::string::npos);

  auto empty = (dir / "empty.gguf").string();
  std::ofstream{empty};
  msg.clear();
  try { GgufFile::open(empty); } catch (const ckjit::Error& e) { msg = e.what(); }
  CHECK(msg.find(empty) != std::string::npos);
  CHECK(msg.find("empty") != std::string::npos);
}

TEST_CASE("gguf random byte corruption never crashes: it parses or throws ckjit::Error") {
  const std::vector<uint8_t> full = base_writer().to_bytes();
  std::mt19937_64 rng(12345);
  int rejected = 0;
  for (int iter = 0; iter < 3000; ++iter) {
    std::vector<uint8_t> b = full;
    int flips = 1 + int(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      size_t at = rng() % b.size();
      b[at] = (rng() % 2) ? uint8_t(rng()) : uint8_t(b[at] ^ (1u << (rng() % 8)));
    }
    if (rng() % 4 == 0) b.resize(rng() % b.size());
    try {
      GgufFile f = GgufFile::from_bytes(std::move(b), "random.gguf");
      // Whatever parsed must be usable: touch every tensor byte range and every value.
      for (const auto& t : f.tensors()) {
        if (t.n_bytes) CHECK(t.data + t.n_bytes <= f.bytes() + f.file_size());
      }
      for (const auto& kv : f.metadata()) (void)to_display_string(kv.value);
    } catch (const ckjit::Error&) {
      ++rejected;
    }
  }
  CHECK(rejected > 0);
}

}  // TEST_SUITE
