#include "runtime/gguf/gguf_reader.h"

#include "runtime/gguf/mapped_file.h"

#include <sys/mman.h>
#include <unistd.h>

namespace ckjit::gguf {

std::string TensorInfo::shape_string() const {
  std::string s = "[";
  for (int k = 0; k < n_dims; ++k) s += (k ? ", " : "") + std::to_string(ne[k]);
  return s + "]";
}

GgufFile GgufFile::open(const std::string& path) {
  auto map = std::make_shared<MappedFile>(path);
  GgufFile f;
  f.name_ = path;
  f.base_ = map->data();
  f.size_ = map->size();
  f.keep_alive_ = std::move(map);
  f.mapped_ = true;
  f.parse();
  return f;
}

GgufFile GgufFile::from_memory(const void* data, size_t size, std::string name) {
  GgufFile f;
  f.name_ = std::move(name);
  f.base_ = static_cast<const uint8_t*>(data);
  f.size_ = size;
  f.parse();
  return f;
}

GgufFile GgufFile::from_bytes(std::vector<uint8_t> bytes, std::string name) {
  auto owned = std::make_shared<std::vector<uint8_t>>(std::move(bytes));
  GgufFile f;
  f.name_ = std::move(name);
  f.base_ = owned->data();
  f.size_ = owned->size();
  f.keep_alive_ = std::move(owned);
  f.parse();
  return f;
}

const KeyValue* GgufFile::find(std::string_view key) const {
  auto it = kv_index_.find(key);
  return it == kv_index_.end() ? nullptr : &kvs_[it->second];
}

void GgufFile::fail_key(std::string_view key, const std::string& what) const {
  throw Error(name_ + ": metadata key " + quoted(key) + " " + what);
}

const Value& GgufFile::value(std::string_view key) const {
  const KeyValue* kv = find(key);
  if (!kv) fail_key(key, "is missing");
  return kv->value;
}

const Value& GgufFile::typed_value(std::string_view key, ValueType want) const {
  const Value& v = value(key);
  if (v.type() != want) {
    fail_key(key, std::string("has type ") + describe_type(v) + ", expected " + value_type_name(want));
  }
  return v;
}

const ArrayView& GgufFile::get_array_view(std::string_view key) const {
  const Value& v = value(key);
  if (v.type() != ValueType::ARRAY) fail_key(key, "has type " + describe_type(v) + ", expected an array");
  return v.array();
}

const ArrayView& GgufFile::typed_array(std::string_view key, ValueType elem) const {
  const ArrayView& a = get_array_view(key);
  if (a.elem != elem) {
    fail_key(key, std::string("has type array[") + value_type_name(a.elem) + "], expected array[" + value_type_name(elem) + "]");
  }
  return a;
}

const std::vector<std::string_view>& GgufFile::get_string_array(std::string_view key) const {
  return *typed_array(key, ValueType::STRING).strings;
}

const TensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

const TensorInfo& GgufFile::tensor(std::string_view name) const {
  const TensorInfo* t = find_tensor(name);
  if (!t) throw Error(name_ + ": tensor " + quoted(name) + " is missing");
  return *t;
}

uint64_t GgufFile::total_tensor_bytes() const {
  uint64_t sum = 0;
  for (const auto& t : tensors_) sum += t.n_bytes;
  return sum;
}

void release_pages(const TensorInfo& t) {
  if (!t.file_mapped || t.n_bytes == 0) return;
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(t.data) + page - 1) / page * page;
  const uintptr_t end = (uintptr_t(t.data) + t.n_bytes) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace ckjit::gguf
