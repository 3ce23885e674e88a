#pragma once
// GGUF writer: metadata of every value type (scalars, strings, arrays of each scalar type and of
// strings) and tensors of any allow-listed type and shape, laid out the way llama.cpp expects
// (tensor data packed in order, each padded to the alignment). Writes version 3 by default; version
// 2 (identical layout) on request. Produces only files the reader accepts: bad input is an Error.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/gguf/gguf_value.h"
#include "runtime/tensor_type.h"

namespace ckjit::gguf {

class GgufWriter {
 public:
  void set_version(uint32_t version);        // 2 or 3
  // Stores general.alignment (u32, power of two); the default without it is 32.
  void set_alignment(uint32_t alignment);

  // One key each; a key may be set only once.
  void set_u8(std::string_view key, uint8_t v) { set_scalar(key, v); }
  void set_i8(std::string_view key, int8_t v) { set_scalar(key, v); }
  void set_u16(std::string_view key, uint16_t v) { set_scalar(key, v); }
  void set_i16(std::string_view key, int16_t v) { set_scalar(key, v); }
  void set_u32(std::string_view key, uint32_t v) { set_scalar(key, v); }
  void set_i32(std::string_view key, int32_t v) { set_scalar(key, v); }
  void set_u64(std::string_view key, uint64_t v) { set_scalar(key, v); }
  void set_i64(std::string_view key, int64_t v) { set_scalar(key, v); }
  void set_f32(std::string_view key, float v) { set_scalar(key, v); }
  void set_f64(std::string_view key, double v) { set_scalar(key, v); }
  void set_bool(std::string_view key, bool v) { set_scalar(key, v); }
  void set_string(std::string_view key, std::string_view v);

  // Arrays of a fixed-size type (uint8_t..double).
  template <class T> void set_array(std::string_view key, std::span<const T> values);
  template <class T> void set_array(std::string_view key, const std::vector<T>& values) {
    set_array(key, std::span<const T>(values));
  }
  void set_bool_array(std::string_view key, const std::vector<bool>& values);
  void set_string_array(std::string_view key, std::span<const std::string> values);
  void set_string_array(std::string_view key, std::span<const std::string_view> values);
  // Any value as a reader holds it (copying metadata from one file to another).
  void set_value(std::string_view key, const Value& v);

  // ne is fastest-varying first (1..4 entries; an empty ne writes n_dims = 0, a scalar). data must
  // hold exactly the tensor's byte size.
  void add_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne, std::vector<uint8_t> data);

  // A tensor whose bytes are produced only while the file is written, for files too large to hold
  // in memory; see the write_file overload below. to_bytes() and write_file(path) refuse them.
  void declare_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne);

  std::vector<uint8_t> to_bytes() const;
  void write_file(const std::string& path) const;  // Error on I/O failure

  // Writes the file, asking `produce` for the bytes of each declared tensor in file order:
  // produce(index, sink) must pass exactly that tensor's byte size to sink, in one or more calls
  // (index counts all tensors, added or declared). Tensors given with add_tensor are written as is.
  using ByteSink = std::function<void(const void* data, size_t n)>;
  using TensorProducer = std::function<void(size_t index, const ByteSink& sink)>;
  void write_file(const std::string& path, const TensorProducer& produce) const;

  size_t tensor_count() const { return tensors_.size(); }
  uint64_t tensor_bytes(size_t index) const { return tensors_.at(index).n_bytes; }

  uint32_t alignment() const { return alignment_; }

 private:
  struct Entry {
    std::string key;
    ValueType type;
    std::vector<uint8_t> payload;  // the encoded value (for arrays: element type, count, elements)
  };
  struct Tensor {
    std::string name;
    TensorType type;
    std::vector<int64_t> ne;
    std::vector<uint8_t> data;
    uint64_t n_bytes = 0;
    bool deferred = false;  // declared: data comes from a TensorProducer
  };

  uint64_t check_tensor(std::string_view name, TensorType type, const std::vector<int64_t>& ne) const;
  template <class T> void set_scalar(std::string_view key, T v);
  std::vector<uint8_t> header_bytes() const;  // everything before the tensor data, padded
  uint64_t padded(uint64_t n) const { return (n + alignment_ - 1) / alignment_ * alignment_; }
  void add_entry(std::string_view key, ValueType type, std::vector<uint8_t> payload);
  template <class Strings> void set_strings(std::string_view key, const Strings& values);

  uint32_t version_ = 3;
  uint32_t alignment_ = 32;
  std::vector<Entry> entries_;
  std::vector<Tensor> tensors_;
};

// Little-endian encoding helpers (shared with tests that build files field by field).
void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n);
template <class T> void put(std::vector<uint8_t>& out, T v) { put_bytes(out, &v, sizeof v); }
void put_string(std::vector<uint8_t>& out, std::string_view s);

template <class T> void GgufWriter::set_scalar(std::string_view key, T v) {
  std::vector<uint8_t> payload;
  if constexpr (std::is_same_v<T, bool>) {
    payload.push_back(v ? 1 : 0);
  } else {
    put(payload, v);
  }
  add_entry(key, ValueTypeOf<T>::value, std::move(payload));
}

template <class T> void GgufWriter::set_array(std::string_view key, std::span<const T> values) {
  static_assert(!std::is_same_v<T, bool>, "use set_bool_array");
  std::vector<uint8_t> payload;
  put(payload, int32_t(ValueTypeOf<T>::value));
  put(payload, uint64_t(values.size()));
  put_bytes(payload, values.data(), values.size_bytes());
  add_entry(key, ValueType::ARRAY, std::move(payload));
}

}  // namespace ckjit::gguf
