#pragma once
// One row per tensor type the runtime can read (as ggml's type_traits): its conversions to and
// from f32, the activation type its integer dot products read, and llama.cpp's float order for
// one weight row. Adding a type is one row here (and one in jit/weight_kernels.h for its kernels).
#include <cstdint>

#include "runtime/tensor_type.h"

namespace ckjit::quant {

struct TypeTraits {
  TensorType type;
  // Rows of n elements (a multiple of the block size).
  void (*to_float)(const void* src, float* dst, int64_t n);
  // llama.cpp's reference quantizer (what ggml_quantize_chunk runs without an importance matrix);
  // nullptr for activation-only types.
  void (*from_float)(const float* src, void* dst, int64_t n);
  // The activation blocks the type's dot products read (Q8_K, Q8_0); F32 for float types.
  TensorType vec_dot_type;
  // One weight row times one activation row in the order llama.cpp's CPU backend uses by
  // default on AVX2 (Q4_K: its repacked 8x8 GEMV); nullptr where ckjit has none.
  float (*llama_dot)(const void* w, const void* x, int64_t n);
  // Byte offsets of the block's f16 scale fields (-1: none). Every other byte of a block may hold
  // any value, which is how the planner builds random operands of any type.
  int16_t f16_scale_offsets[2];
};

// The row of `t`, or nullptr when the runtime cannot convert that type.
const TypeTraits* type_traits(TensorType t);

}  // namespace ckjit::quant
