#include "runtime/gguf/gguf_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>

#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"

namespace ckjit::gguf {

void put_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  auto b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

void put_string(std::vector<uint8_t>& out, std::string_view s) {
  put(out, uint64_t(s.size()));
  put_bytes(out, s.data(), s.size());
}

void GgufWriter::set_version(uint32_t version) {
  if (version != 2 && version != 3) throw Error("GGUF writer: version " + std::to_string(version) + " not supported (2 or 3)");
  version_ = version;
}

void GgufWriter::set_alignment(uint32_t alignment) { set_u32("general.alignment", alignment); }

void GgufWriter::add_entry(std::string_view key, ValueType type, std::vector<uint8_t> payload) {
  if (key.empty() || key.size() > 65535) throw Error("GGUF writer: metadata key must be 1..65535 bytes");
  for (const auto& e : entries_)
    if (e.key == key) throw Error("GGUF writer: duplicate metadata key " + quoted(key));
  if (key == "general.alignment") {
    uint32_t a = 0;
    if (type == ValueType::U32) std::memcpy(&a, payload.data(), 4);
    if (type != ValueType::U32 || a == 0 || (a & (a - 1)) != 0) {
      throw Error("GGUF writer: general.alignment must be a u32 power of two");
    }
    alignment_ = a;
  }
  entries_.push_back({std::string(key), type, std::move(payload)});
}

void GgufWriter::set_string(std::string_view key, std::string_view v) {
  std::vector<uint8_t> payload;
  put_string(payload, v);
  add_entry(key, ValueType::STRING, std::move(payload));
}

void GgufWriter::set_bool_array(std::string_view key, const std::vector<bool>& values) {
  std::vector<uint8_t> payload;
  put(payload, int32_t(ValueType::BOOL));
  put(payload, uint64_t(values.size()));
  for (bool b : values) payload.push_back(b ? 1 : 0);
  add_entry(key, ValueType::ARRAY, std::move(payload));
}

template <class Strings> void GgufWriter::set_strings(std::string_view key, const Strings& values) {
  std::vector<uint8_t> payload;
  put(payload, int32_t(ValueType::STRING));
  put(payload, uint64_t(values.size()));
  for (const auto& s : values) put_string(payload, s);
  add_entry(key, ValueType::ARRAY, std::move(payload));
}

void GgufWriter::set_string_array(std::string_view key, std::span<const std::string> values) { set_strings(key, values); }
void GgufWriter::set_string_array(std::string_view key, std::span<const std::string_view> values) { set_strings(key, values); }

void GgufWriter::set_value(std::string_view key, const Value& v) {
  if (v.type() == ValueType::STRING) return set_string(key, v.string());
  std::vector<uint8_t> payload;
  if (v.type() != ValueType::ARRAY) {
    uint8_t raw[8];
    const size_t n = value_type_size(v.type());
    switch (n) {  // the scalar's own bytes, whatever its type
      case 1: { const auto x = v.scalar<uint8_t>(); std::memcpy(raw, &x, 1); break; }
      case 2: { const auto x = v.scalar<uint16_t>(); std::memcpy(raw, &x, 2); break; }
      case 4: { const auto x = v.scalar<uint32_t>(); std::memcpy(raw, &x, 4); break; }
      default: { const auto x = v.scalar<uint64_t>(); std::memcpy(raw, &x, 8); break; }
    }
    put_bytes(payload, raw, n);
    return add_entry(key, v.type(), std::move(payload));
  }
  const ArrayView& a = v.array();
  if (a.elem == ValueType::STRING) return set_strings(key, *a.strings);
  put(payload, int32_t(a.elem));
  put(payload, uint64_t(a.count));
  put_bytes(payload, a.data, size_t(a.count) * value_type_size(a.elem));
  add_entry(key, ValueType::ARRAY, std::move(payload));
}

uint64_t GgufWriter::check_tensor(std::string_view name, TensorType type, const std::vector<int64_t>& ne) const {
  std::string what = "GGUF writer: tensor " + quoted(name);
  if (name.empty() || name.size() > kMaxTensorNameBytes) {
    throw Error(what + ": name must be 1.." + std::to_string(kMaxTensorNameBytes) + " bytes");
  }
  for (const auto& t : tensors_)
    if (t.name == name) throw Error(what + ": duplicate tensor name");
  if (ne.size() > size_t(kMaxDims)) throw Error(what + ": more than 4 dimensions");
  const TensorTypeInfo& info = tensor_type_info(type);
  if (!info.in_files) throw Error(what + ": type " + info.name + " cannot be stored in a file");
  int64_t n = 1;
  for (int64_t d : ne) {
    if (d < 0) throw Error(what + ": negative dimension");
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) throw Error(what + ": element count overflows");
    n *= d;
  }
  int64_t ne0 = ne.empty() ? 1 : ne[0];
  if (ne0 % info.block_elems != 0) throw Error(what + ": ne[0] is not a multiple of the block size of " + info.name);
  return uint64_t(n / info.block_elems) * uint64_t(info.block_bytes);
}

void GgufWriter::add_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne, std::vector<uint8_t> data) {
  uint64_t bytes = check_tensor(name, type, ne);
  if (data.size() != bytes) {
    throw Error("GGUF writer: tensor " + quoted(name) + ": has " + std::to_string(data.size()) +
                " data bytes, its shape needs " + std::to_string(bytes));
  }
  tensors_.push_back({std::string(name), type, std::move(ne), std::move(data), bytes, false});
}

void GgufWriter::declare_tensor(std::string_view name, TensorType type, std::vector<int64_t> ne) {
  uint64_t bytes = check_tensor(name, type, ne);
  tensors_.push_back({std::string(name), type, std::move(ne), {}, bytes, true});
}

std::vector<uint8_t> GgufWriter::header_bytes() const {
  std::vector<uint8_t> out;
  put_bytes(out, "GGUF", 4);
  put(out, version_);
  put(out, int64_t(tensors_.size()));
  put(out, int64_t(entries_.size()));
  for (const auto& e : entries_) {
    put_string(out, e.key);
    put(out, int32_t(e.type));
    put_bytes(out, e.payload.data(), e.payload.size());
  }
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put(out, uint32_t(t.ne.size()));
    for (int64_t d : t.ne) put(out, d);
    put(out, int32_t(t.type));
    put(out, offset);
    offset += padded(t.n_bytes);
  }
  out.resize(padded(out.size()), 0);  // like llama.cpp, even without tensors
  return out;
}

std::vector<uint8_t> GgufWriter::to_bytes() const {
  std::vector<uint8_t> out = header_bytes();
  for (const auto& t : tensors_) {
    if (t.deferred) throw Error("GGUF writer: tensor " + quoted(t.name) + " is declared without data; use write_file with a producer");
    put_bytes(out, t.data.data(), t.data.size());
    out.resize(out.size() + padded(t.data.size()) - t.data.size(), 0);
  }
  return out;
}

void GgufWriter::write_file(const std::string& path) const {
  write_file(path, [this](size_t index, const ByteSink&) {
    throw Error("GGUF writer: tensor " + quoted(tensors_[index].name) + " is declared without data; use write_file with a producer");
  });
}

void GgufWriter::write_file(const std::string& path, const TensorProducer& produce) const {
  // Streams the tensor data instead of assembling the whole file in memory.
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!file) throw Error(path + ": cannot create: " + std::strerror(errno));
  auto write = [&](const void* p, size_t n) {
    if (n != 0 && std::fwrite(p, 1, n, file.get()) != n) throw Error(path + ": write failed: " + std::strerror(errno));
  };
  static const uint8_t zeros[256] = {};
  std::vector<uint8_t> header = header_bytes();
  write(header.data(), header.size());
  for (size_t i = 0; i < tensors_.size(); ++i) {
    const Tensor& t = tensors_[i];
    if (t.deferred) {
      uint64_t written = 0;
      produce(i, [&](const void* p, size_t n) {
        if (written + n > t.n_bytes) throw Error("GGUF writer: tensor " + quoted(t.name) + ": producer gave more bytes than its shape needs");
        write(p, n);
        written += n;
      });
      if (written != t.n_bytes) {
        throw Error("GGUF writer: tensor " + quoted(t.name) + ": producer gave " + std::to_string(written) +
                    " bytes, its shape needs " + std::to_string(t.n_bytes));
      }
    } else {
      write(t.data.data(), t.data.size());
    }
    for (size_t pad = padded(t.n_bytes) - t.n_bytes; pad > 0;) {
      size_t n = std::min(pad, sizeof zeros);
      write(zeros, n);
      pad -= n;
    }
  }
  FILE* f = file.release();
  if (std::fclose(f) != 0) throw Error(path + ": write failed: " + std::strerror(errno));
}

}  // namespace ckjit::gguf
