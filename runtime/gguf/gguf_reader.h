#pragma once
// GGUF reader (versions 2 and 3, little-endian). The whole file is validated when it is opened
// (see ../shared/spec/gguf.md §7): every count, length, type, shape and offset is checked against
// the bytes before use, and every failure is a ckjit::Error naming the file, the byte offset and
// the problem. Afterwards metadata strings and string arrays are views into the bytes, and tensor
// data pointers point into the mapping (no copies).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "runtime/error.h"
#include "runtime/gguf/gguf_value.h"
#include "runtime/tensor_type.h"

namespace ckjit::gguf {

constexpr uint32_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorNameBytes = 63;  // llama.cpp: names must fit a 64-byte buffer with NUL
constexpr int kMaxDims = 4;

struct KeyValue {
  std::string_view key;
  Value value;
  uint64_t file_offset = 0;  // where the record (its key length) starts
};

struct TensorInfo {
  std::string_view name;
  TensorTypeInfo type;                   // always an in-file type of the allow-list
  int n_dims = 0;                        // as stored (0..4); ne[k] = 1 for k >= n_dims
  std::array<int64_t, kMaxDims> ne{};    // fastest-varying first
  int64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint64_t offset = 0;                   // relative to the data section
  uint64_t info_offset = 0;              // where the tensor-info record starts in the file
  const uint8_t* data = nullptr;         // data_offset + offset inside the file's bytes
  bool file_mapped = false;              // data is a read-only file mapping (release_pages may drop it)

  std::string shape_string() const;      // "[2048, 151936]" (n_dims entries; "[]" for a scalar)
  // Bytes of one contiguous row of ne[0] elements, and the number of rows (ne[1]*ne[2]*ne[3]).
  uint64_t row_bytes() const { return uint64_t(ne[0] / type.block_elems * type.block_bytes); }
  int64_t n_rows() const { return ne[1] * ne[2] * ne[3]; }
};

// Drops the resident pages wholly inside tensor t's data (madvise DONTNEED) when the data is a
// read-only file mapping: a weight that was repacked into another layout and is not read again
// then no longer counts twice in memory (a later read would fault the pages back in from the
// file). No-op for files held in memory.
void release_pages(const TensorInfo& t);

class GgufFile {
 public:
  // Maps `path` read-only and validates it.
  static GgufFile open(const std::string& path);
  // Validates `size` bytes at `data`, which must stay alive and unchanged while the GgufFile (or any
  // view it handed out) is used. `name` stands for the file in error messages.
  static GgufFile from_memory(const void* data, size_t size, std::string name);
  // Same, but the GgufFile keeps the bytes.
  static GgufFile from_bytes(std::vector<uint8_t> bytes, std::string name);

  const std::string& name() const { return name_; }
  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  uint64_t data_offset() const { return data_offset_; }
  size_t file_size() const { return size_; }
  const uint8_t* bytes() const { return base_; }

  // ---- metadata (in file order) ----
  const std::vector<KeyValue>& metadata() const { return kvs_; }
  const KeyValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }
  // The value of `key`; Error if missing.
  const Value& value(std::string_view key) const;

  // Typed getters: the stored type must match exactly (a u32 key stored as i32 is an Error, as in
  // llama.cpp). T is one of uint8_t..double, bool, std::string_view, std::string.
  template <class T> T get(std::string_view key) const;
  // As get(), but nullopt when the key is absent (a present key of the wrong type is still an Error).
  template <class T> std::optional<T> get_optional(std::string_view key) const;
  // A scalar array copied out (T as for get(), not string); Error if missing or of another type.
  template <class T> std::vector<T> get_array(std::string_view key) const;
  // A string array as views into the file (no copy).
  const std::vector<std::string_view>& get_string_array(std::string_view key) const;
  // Raw view of any array value; Error if missing or not an array.
  const ArrayView& get_array_view(std::string_view key) const;

  uint32_t get_u32(std::string_view key) const { return get<uint32_t>(key); }
  int32_t get_i32(std::string_view key) const { return get<int32_t>(key); }
  uint64_t get_u64(std::string_view key) const { return get<uint64_t>(key); }
  float get_f32(std::string_view key) const { return get<float>(key); }
  bool get_bool(std::string_view key) const { return get<bool>(key); }
  std::string_view get_string(std::string_view key) const { return get<std::string_view>(key); }

  // ---- tensors (in file order) ----
  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* find_tensor(std::string_view name) const;
  const TensorInfo& tensor(std::string_view name) const;  // Error if missing

  // Total bytes of all tensors (without padding).
  uint64_t total_tensor_bytes() const;

 private:
  GgufFile() = default;
  void parse();
  [[noreturn]] void fail_key(std::string_view key, const std::string& what) const;
  const Value& typed_value(std::string_view key, ValueType want) const;
  const ArrayView& typed_array(std::string_view key, ValueType elem) const;

  std::string name_;
  std::shared_ptr<const void> keep_alive_;  // the mapping or the owned bytes
  bool mapped_ = false;                     // base_ is a read-only file mapping
  const uint8_t* base_ = nullptr;
  size_t size_ = 0;

  uint32_t version_ = 0;
  uint32_t alignment_ = kDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<KeyValue> kvs_;
  std::vector<TensorInfo> tensors_;
  // String array elements, one vector per string-array value (deque-like: pointers stay valid).
  std::vector<std::unique_ptr<std::vector<std::string_view>>> string_arrays_;
  std::unordered_map<std::string_view, size_t> kv_index_;
  std::unordered_map<std::string_view, size_t> tensor_index_;

};

// ---- template definitions ----

template <class T> T GgufFile::get(std::string_view key) const {
  const Value& v = typed_value(key, ValueTypeOf<T>::value);
  if constexpr (std::is_same_v<T, std::string_view>) {
    return v.string();
  } else if constexpr (std::is_same_v<T, std::string>) {
    return std::string(v.string());
  } else {
    return v.scalar<T>();
  }
}

template <class T> std::optional<T> GgufFile::get_optional(std::string_view key) const {
  if (!has(key)) return std::nullopt;
  return get<T>(key);
}

template <class T> std::vector<T> GgufFile::get_array(std::string_view key) const {
  static_assert(!std::is_same_v<T, std::string_view> && !std::is_same_v<T, std::string>,
                "use get_string_array for string arrays");
  const ArrayView& a = typed_array(key, ValueTypeOf<T>::value);
  std::vector<T> out(a.count);
  for (uint64_t i = 0; i < a.count; ++i) {
    if constexpr (std::is_same_v<T, bool>) {
      out[i] = a.bool_at(i);
    } else {
      out[i] = a.at<T>(i);
    }
  }
  return out;
}

}  // namespace ckjit::gguf
