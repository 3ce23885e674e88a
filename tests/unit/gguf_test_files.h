#pragma once
// Shared by the GGUF tests: a small valid file whose layout the tests patch, byte patching helpers,
// and a per-process scratch directory.
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"

namespace gguf_test {

using namespace ckjit;
using namespace ckjit::gguf;

// A per-process scratch directory, removed when the process exits (kept if CKJIT_KEEP_TEST_FILES is set).
inline std::filesystem::path scratch_dir() {
  struct Dir {
    std::filesystem::path path =
        std::filesystem::temp_directory_path() / ("ckjit_gguf_test_" + std::to_string(::getpid()));
    Dir() { std::filesystem::create_directories(path); }
    ~Dir() {
      if (std::getenv("CKJIT_KEEP_TEST_FILES")) return;  // to look at (or replay) the files written
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Dir dir;
  return dir.path;
}

inline std::vector<uint8_t> pattern_bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = uint8_t(seed + i * 31 + (i >> 8));
  return v;
}

// The base file of the hostile tests: a few keys of several types and three tensors whose last
// one ends exactly at the end of the file (so any truncation cuts tensor data).
//   tensors: a F32 [8] (32 B), b Q8_0 [32, 2] (68 B, padded to 96), c F16 [16, 2] (64 B)
inline GgufWriter base_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "test");
  w.set_alignment(32);
  w.set_u32("test.u32", 7);
  w.set_bool("test.flag", true);
  w.set_array<int32_t>("test.ints", std::vector<int32_t>{1, 2, 3});
  w.set_bool_array("test.flags", {true, false});
  w.set_string_array("test.tokens", std::vector<std::string>{"a", "bc", "def"});
  w.set_string("test.str", "hello");
  w.add_tensor("a", TensorType::F32, {8}, pattern_bytes(32, 1));
  w.add_tensor("b", TensorType::Q8_0, {32, 2}, pattern_bytes(68, 2));
  w.add_tensor("c", TensorType::F16, {16, 2}, pattern_bytes(64, 3));
  return w;
}

// Byte positions of the fields of the base file, found with the reader itself.
struct Layout {
  std::vector<uint8_t> bytes;
  GgufFile file;

  explicit Layout(std::vector<uint8_t> b) : bytes(std::move(b)), file(GgufFile::from_memory(bytes.data(), bytes.size(), "base")) {}
  Layout(const Layout&) = delete;  // `file` views `bytes`

  uint64_t kv(std::string_view key) const { return file.find(key)->file_offset; }
  uint64_t kv_type(std::string_view key) const { return kv(key) + 8 + key.size(); }
  uint64_t kv_value(std::string_view key) const { return kv_type(key) + 4; }
  uint64_t array_elem_type(std::string_view key) const { return kv_value(key); }
  uint64_t array_count(std::string_view key) const { return kv_value(key) + 4; }
  uint64_t array_data(std::string_view key) const { return kv_value(key) + 12; }

  const TensorInfo& t(std::string_view name) const { return file.tensor(name); }
  uint64_t tensor(std::string_view name) const { return t(name).info_offset; }
  uint64_t tensor_n_dims(std::string_view name) const { return tensor(name) + 8 + name.size(); }
  uint64_t tensor_ne(std::string_view name, int k) const { return tensor_n_dims(name) + 4 + 8 * uint64_t(k); }
  uint64_t tensor_type(std::string_view name) const { return tensor_ne(name, t(name).n_dims); }
  uint64_t tensor_offset(std::string_view name) const { return tensor_type(name) + 4; }
  uint64_t end_of_infos() const {
    const TensorInfo& last = file.tensors().back();
    return tensor_offset(last.name) + 8;
  }
};

template <class T> std::vector<uint8_t> patched(std::vector<uint8_t> bytes, uint64_t at, T v) {
  std::memcpy(bytes.data() + at, &v, sizeof v);
  return bytes;
}

inline std::vector<uint8_t> truncated(std::vector<uint8_t> bytes, size_t n) {
  bytes.resize(n);
  return bytes;
}

}  // namespace gguf_test
