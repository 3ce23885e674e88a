#pragma once
// ggml tensor element types as stored in GGUF files (ids are part of the file format).
// ckjit keeps an explicit allow-list: a type is "supported" only when ckjit can read it.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace ckjit {

enum class TensorType : int32_t {
  F32 = 0, F16 = 1, Q4_0 = 2, Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, Q8_0 = 8, Q8_1 = 9,
  Q2_K = 10, Q3_K = 11, Q4_K = 12, Q5_K = 13, Q6_K = 14, Q8_K = 15,
  I8 = 24, I16 = 25, I32 = 26, I64 = 27, F64 = 28, BF16 = 30,
};

struct TensorTypeInfo {
  TensorType type;
  const char* name;
  int64_t block_elems;   // elements per block
  int64_t block_bytes;   // bytes per block
  bool in_files;         // may appear in a GGUF file (Q8_K/Q8_1 are activation-only)
};

// Info for a type id ckjit supports in files or kernels; nullopt for unknown, removed or
// unsupported ids (the GGUF reader rejects those with a clear message).
std::optional<TensorTypeInfo> tensor_type_info(int32_t id);
const TensorTypeInfo& tensor_type_info(TensorType t);
std::string tensor_type_name(int32_t id);  // "Q4_K", or "type#40" for ids ckjit does not know

// Bytes of a row of `elems` elements; elems must be a multiple of the block size.
inline int64_t row_bytes(const TensorTypeInfo& t, int64_t elems) { return elems / t.block_elems * t.block_bytes; }

}  // namespace ckjit
