#pragma once
// Access to llama.cpp's own ggml (the prebuilt libraries of the npm package
// @node-llama-cpp/linux-x64, unpacked by tools/setup.sh) for bit-exact parity tests. Only the few C
// entry points and structs needed are declared here; the struct layouts are those of ggml.h /
// ggml-cpu.h of the ggml the package ships (0.25.x) and are verified by behaviour on load.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ckjit::test {

// ggml_type ids used here (same numbering as GGUF / ckjit::TensorType).
enum GgmlType : int { kF32 = 0, kF16 = 1, kQ8_0 = 8, kQ4_K = 12, kQ5_K = 13, kQ6_K = 14, kQ8_K = 15, kBF16 = 30 };

using ToFloat = void (*)(const void* x, float* y, int64_t k);
using FromFloat = void (*)(const float* x, void* y, int64_t k);
using VecDot = void (*)(int n, float* s, size_t bs, const void* x, size_t bx, const void* y, size_t by, int nrc);

struct GgmlTypeTraits {  // struct ggml_type_traits (ggml.h)
  const char* type_name;
  int64_t blck_size;
  int64_t blck_size_interleave;
  size_t type_size;
  bool is_quantized;
  ToFloat to_float;
  FromFloat from_float_ref;
};

struct GgmlTypeTraitsCpu {  // struct ggml_type_traits_cpu (ggml-cpu.h)
  FromFloat from_float;
  VecDot vec_dot;
  int vec_dot_type;
  int64_t nrows;
};

struct GgmlPeer {
  std::string error;  // non-empty when the libraries could not be loaded or did not check out
  std::string version;
  size_t (*quantize_chunk)(int type, const float* src, void* dst, int64_t start, int64_t nrows,
                           int64_t n_per_row, const float* imatrix) = nullptr;
  const GgmlTypeTraits* (*type_traits)(int type) = nullptr;
  const GgmlTypeTraitsCpu* (*type_traits_cpu)(int type) = nullptr;
  void* (*symbol)(const char* name) = nullptr;  // dlsym in the CPU library
  // Dequantizer of a type: the base traits' to_float; for Q8_K (whose traits entry has none) the
  // exported dequantize_row_q8_K of libggml-base.
  ToFloat to_float(int type) const;
  ToFloat q8_K_to_float = nullptr;
};

// Loads libggml-base.so and the AVX2 ("haswell") CPU variant once; later calls return the same.
const GgmlPeer& ggml_peer();

}  // namespace ckjit::test
