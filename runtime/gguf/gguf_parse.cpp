// GgufFile::parse: the validation pass of ../shared/spec/gguf.md §7.1, at least as strict as
// llama.cpp. Nothing read from the file is used (as a size, count or offset) before it is checked.
#include <cinttypes>
#include <cstdio>
#include <limits>

#include "runtime/gguf/byte_cursor.h"
#include "runtime/gguf/gguf_reader.h"

namespace ckjit::gguf {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint64_t kMaxStringBytes = uint64_t(1) << 30;     // llama.cpp's limit for any string
constexpr uint64_t kMaxKeyBytes = 65535;                    // spec: keys are at most 65535 bytes
constexpr uint64_t kMaxArrayElements = uint64_t(1) << 30;   // llama.cpp GGUF_MAX_ARRAY_ELEMENTS
constexpr uint64_t kMinKvRecordBytes = 8 + 1 + 4 + 1;       // key len, 1-byte key, type, u8 value
constexpr uint64_t kMinTensorInfoBytes = 8 + 1 + 4 + 4 + 8; // name len, 1-byte name, n_dims, type, offset

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08" PRIx32, v);
  return buf;
}

bool valid_value_type(int32_t t) { return t >= 0 && t < kValueTypeCount; }

uint64_t align_up(uint64_t x, uint64_t a) { return x + (a - x % a) % a; }

// Walks the bytes once and fills the GgufFile.
class Parser {
 public:
  Parser(const uint8_t* data, size_t size, const std::string& name) : cur_(data, size, name), base_(data) {}

  void header(uint32_t& version, uint64_t& n_tensors, uint64_t& n_kv) {
    if (cur_.size() < 4 || std::memcmp(base_, kMagic, 4) != 0) {
      if (cur_.size() < 4) cur_.fail_at(0, "not a GGUF file: only " + std::to_string(cur_.size()) + " bytes, too short for the magic");
      std::string got = quoted(std::string_view(reinterpret_cast<const char*>(base_), 4));
      cur_.fail_at(0, "not a GGUF file: bad magic " + got + " (expected \"GGUF\")");
    }
    cur_.take(4, "magic");
    size_t at = cur_.pos();
    version = cur_.read<uint32_t>("version");
    if (version != 0 && (version & 0xFFFF) == 0) {
      cur_.fail_at(at, "version " + hex32(version) +
                           " looks byte-swapped: this is probably a big-endian GGUF file, which ckjit does not support");
    }
    if (version == 0) cur_.fail_at(at, "invalid GGUF version 0");
    if (version == 1) cur_.fail_at(at, "GGUF version 1 (32-bit counts) is not supported; convert the file to version 3");
    if (version > 3) cur_.fail_at(at, "unsupported GGUF version " + std::to_string(version) + " (ckjit reads 2 and 3)");

    at = cur_.pos();
    auto nt = cur_.read<int64_t>("tensor count");
    if (nt < 0) cur_.fail_at(at, "negative tensor count " + std::to_string(nt));
    at = cur_.pos();
    auto nk = cur_.read<int64_t>("metadata count");
    if (nk < 0) cur_.fail_at(at, "negative metadata count " + std::to_string(nk));
    // Bound both counts by what the remaining bytes can hold before allocating anything.
    uint64_t rem = cur_.remaining();
    bool too_many = uint64_t(nk) > rem / kMinKvRecordBytes || uint64_t(nt) > rem / kMinTensorInfoBytes ||
                    uint64_t(nk) * kMinKvRecordBytes + uint64_t(nt) * kMinTensorInfoBytes > rem;
    if (too_many) {
      cur_.fail_at(8, std::to_string(nt) + " tensors and " + std::to_string(nk) +
                          " metadata entries cannot fit in the " + std::to_string(rem) + " bytes after the header");
    }
    n_tensors = uint64_t(nt);
    n_kv = uint64_t(nk);
  }

  KeyValue key_value(std::vector<std::unique_ptr<std::vector<std::string_view>>>& string_arrays) {
    KeyValue kv;
    kv.file_offset = cur_.pos();
    kv.key = cur_.read_string("metadata key", kMaxKeyBytes);
    if (kv.key.empty()) cur_.fail_at(kv.file_offset, "empty metadata key");
    std::string what = "value of " + quoted(kv.key);
    size_t type_at = cur_.pos();
    auto t = cur_.read<int32_t>("type of " + quoted(kv.key));
    if (!valid_value_type(t)) {
      cur_.fail_at(type_at, "metadata " + quoted(kv.key) + " has unknown value type " + std::to_string(t));
    }
    auto type = ValueType(t);
    if (type == ValueType::STRING) {
      kv.value = Value::make_string(cur_.read_string(what, kMaxStringBytes));
    } else if (type == ValueType::ARRAY) {
      kv.value = Value::make_array(array(kv.key, string_arrays));
    } else {
      size_t at = cur_.pos();
      size_t n = value_type_size(type);
      const uint8_t* p = cur_.take(n, what);
      if (type == ValueType::BOOL && *p > 1) {
        cur_.fail_at(at, "metadata " + quoted(kv.key) + ": bool value " + std::to_string(*p) + " is neither 0 nor 1");
      }
      kv.value = Value::make_scalar(type, p, n);
    }
    return kv;
  }

  TensorInfo tensor_info(uint32_t alignment) {
    TensorInfo ti;
    ti.info_offset = cur_.pos();
    ti.name = cur_.read_string("tensor name", kMaxStringBytes);
    if (ti.name.empty()) cur_.fail_at(ti.info_offset, "empty tensor name");
    if (ti.name.size() > kMaxTensorNameBytes) {
      cur_.fail_at(ti.info_offset, "tensor name " + quoted(ti.name) + " is " + std::to_string(ti.name.size()) +
                                       " bytes; at most " + std::to_string(kMaxTensorNameBytes) + " are allowed");
    }
    std::string tname = "tensor " + quoted(ti.name);
    size_t at = cur_.pos();
    auto n_dims = cur_.read<uint32_t>("dimension count of " + tname);
    if (n_dims > uint32_t(kMaxDims)) {
      cur_.fail_at(at, tname + " has " + std::to_string(n_dims) + " dimensions; at most " + std::to_string(kMaxDims) +
                           " are supported");
    }
    ti.n_dims = int(n_dims);
    ti.ne.fill(1);
    for (uint32_t k = 0; k < n_dims; ++k) {
      at = cur_.pos();
      ti.ne[k] = cur_.read<int64_t>("dimension of " + tname);
      if (ti.ne[k] < 0) cur_.fail_at(at, tname + " has negative dimension ne[" + std::to_string(k) + "] = " + std::to_string(ti.ne[k]));
    }
    // Element count must fit int64 (checked step by step; any zero dimension makes it 0).
    int64_t n = 1;
    bool zero = false;
    for (int64_t d : ti.ne) zero = zero || d == 0;
    if (!zero) {
      for (int64_t d : ti.ne) {
        if (n > std::numeric_limits<int64_t>::max() / d) {
          cur_.fail_at(ti.info_offset, tname + " shape " + ti.shape_string() + " has too many elements (overflow)");
        }
        n *= d;
      }
    } else {
      n = 0;
    }
    ti.n_elements = n;

    at = cur_.pos();
    auto type_id = cur_.read<int32_t>("type of " + tname);
    auto info = tensor_type_info(type_id);
    if (!info) cur_.fail_at(at, tname + " has unknown or unsupported tensor type id " + std::to_string(type_id));
    if (!info->in_files) {
      cur_.fail_at(at, tname + " has type " + info->name + ", which is an activation-only type and cannot appear in a file");
    }
    ti.type = *info;
    if (ti.ne[0] % info->block_elems != 0) {
      cur_.fail_at(at, tname + " of type " + info->name + ": ne[0] = " + std::to_string(ti.ne[0]) +
                           " is not a multiple of the block size " + std::to_string(info->block_elems));
    }
    int64_t blocks = n / info->block_elems;
    if (blocks > std::numeric_limits<int64_t>::max() / info->block_bytes) {
      cur_.fail_at(at, tname + " shape " + ti.shape_string() + " of type " + info->name + " has a byte size that overflows");
    }
    ti.n_bytes = uint64_t(blocks * info->block_bytes);

    at = cur_.pos();
    ti.offset = cur_.read<uint64_t>("data offset of " + tname);
    if (ti.offset % alignment != 0) {
      cur_.fail_at(at, tname + " data offset " + std::to_string(ti.offset) + " is not a multiple of the alignment " +
                           std::to_string(alignment));
    }
    return ti;
  }

  ByteCursor& cursor() { return cur_; }

 private:
  ArrayView array(std::string_view key, std::vector<std::unique_ptr<std::vector<std::string_view>>>& string_arrays) {
    std::string what = "array " + quoted(key);
    size_t at = cur_.pos();
    auto et = cur_.read<int32_t>("element type of " + what);
    if (et == int32_t(ValueType::ARRAY)) cur_.fail_at(at, what + " is an array of arrays (nested arrays are not supported)");
    if (!valid_value_type(et)) cur_.fail_at(at, what + " has unknown element type " + std::to_string(et));
    ArrayView a;
    a.elem = ValueType(et);
    at = cur_.pos();
    a.count = cur_.read<uint64_t>("element count of " + what);
    if (a.count > kMaxArrayElements) {
      cur_.fail_at(at, what + " has " + std::to_string(a.count) + " elements; the limit is " + std::to_string(kMaxArrayElements));
    }
    // Strings take at least their 8-byte length each.
    uint64_t min_elem = a.elem == ValueType::STRING ? 8 : value_type_size(a.elem);
    if (a.count * min_elem > cur_.remaining()) {
      cur_.fail_at(at, what + " of " + std::to_string(a.count) + " " + value_type_name(a.elem) + " elements needs at least " +
                           std::to_string(a.count * min_elem) + " bytes, only " + std::to_string(cur_.remaining()) + " remain");
    }
    if (a.elem == ValueType::STRING) {
      auto strings = std::make_unique<std::vector<std::string_view>>();
      strings->reserve(a.count);
      std::string element_what = "string element of " + what;  // built once, not per element
      for (uint64_t i = 0; i < a.count; ++i) strings->push_back(cur_.read_string(element_what, kMaxStringBytes));
      a.strings = strings.get();
      string_arrays.push_back(std::move(strings));
    } else {
      at = cur_.pos();
      a.data = cur_.take(a.count * min_elem, "elements of " + what);
      if (a.elem == ValueType::BOOL) {
        for (uint64_t i = 0; i < a.count; ++i) {
          if (a.data[i] > 1) {
            cur_.fail_at(at + i, what + ": bool element " + std::to_string(i) + " is " + std::to_string(a.data[i]) + ", neither 0 nor 1");
          }
        }
      }
    }
    return a;
  }

  ByteCursor cur_;
  const uint8_t* base_;
};

}  // namespace

void GgufFile::parse() {
  Parser p(base_, size_, name_);
  ByteCursor& cur = p.cursor();
  uint64_t n_tensors = 0, n_kv = 0;
  p.header(version_, n_tensors, n_kv);

  kvs_.reserve(n_kv);
  kv_index_.reserve(n_kv);
  for (uint64_t i = 0; i < n_kv; ++i) {
    KeyValue kv = p.key_value(string_arrays_);
    auto [it, inserted] = kv_index_.emplace(kv.key, kvs_.size());
    if (!inserted) {
      cur.fail_at(kv.file_offset, "duplicate metadata key " + quoted(kv.key) + " (first at byte " +
                                      std::to_string(kvs_[it->second].file_offset) + ")");
    }
    kvs_.push_back(kv);
  }

  if (const KeyValue* a = find("general.alignment")) {
    if (a->value.type() != ValueType::U32) {
      cur.fail_at(a->file_offset, "general.alignment must be of type u32, found " + describe_type(a->value));
    }
    uint32_t v = a->value.scalar<uint32_t>();
    if (v == 0 || (v & (v - 1)) != 0) {
      cur.fail_at(a->file_offset, "general.alignment " + std::to_string(v) + " is not a non-zero power of two");
    }
    alignment_ = v;
  }

  tensors_.reserve(n_tensors);
  tensor_index_.reserve(n_tensors);
  for (uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo ti = p.tensor_info(alignment_);
    auto [it, inserted] = tensor_index_.emplace(ti.name, tensors_.size());
    if (!inserted) {
      cur.fail_at(ti.info_offset, "duplicate tensor name " + quoted(ti.name) + " (first at byte " +
                                      std::to_string(tensors_[it->second].info_offset) + ")");
    }
    tensors_.push_back(ti);
  }

  // Data section: starts at the next alignment boundary; tensors are packed in descriptor order,
  // each at the running sum of the aligned sizes before it (llama.cpp's rule, so no gap or overlap).
  data_offset_ = align_up(cur.pos(), alignment_);
  if (n_tensors == 0) return;
  if (data_offset_ > size_) {
    cur.fail_at(cur.pos(), "truncated file: the tensor data section should start at byte " + std::to_string(data_offset_) +
                               " but the file has only " + std::to_string(size_) + " bytes");
  }
  uint64_t expected = 0;
  uint64_t data_bytes = size_ - data_offset_;
  for (TensorInfo& ti : tensors_) {
    std::string tname = "tensor " + quoted(ti.name);
    if (ti.offset != expected) {
      cur.fail_at(ti.info_offset, tname + " has data offset " + std::to_string(ti.offset) + ", expected " +
                                      std::to_string(expected) +
                                      " (tensors must be packed in order without gaps or overlaps)");
    }
    if (ti.n_bytes > data_bytes || ti.offset > data_bytes - ti.n_bytes) {
      cur.fail_at(ti.info_offset, tname + " data (" + std::to_string(ti.n_bytes) + " bytes at file offset " +
                                      std::to_string(data_offset_ + ti.offset) + ") extends past the end of the file (" +
                                      std::to_string(size_) + " bytes)");
    }
    ti.data = base_ + data_offset_ + ti.offset;
    ti.file_mapped = mapped_;
    // Cannot overflow: offset + n_bytes <= data_bytes < 2^63 and alignment <= 2^31.
    expected = ti.offset + align_up(ti.n_bytes, alignment_);
  }
}

}  // namespace ckjit::gguf
