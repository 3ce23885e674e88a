#include "runtime/quants/type_traits.h"

#include <cstddef>

#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
namespace {

// Typed routines seen through the table's untyped signatures.
template <class Block, void (*F)(const Block*, float*, int64_t)>
void to_float_as(const void* src, float* dst, int64_t n) { F(static_cast<const Block*>(src), dst, n); }

template <class Block, void (*F)(const float*, Block*, int64_t)>
void from_float_as(const float* src, void* dst, int64_t n) { F(src, static_cast<Block*>(dst), n); }

template <class Block, class Act, float (*F)(const Block*, const Act*, int64_t)>
float dot_as(const void* w, const void* x, int64_t n) {
  return F(static_cast<const Block*>(w), static_cast<const Act*>(x), n);
}

void f32_to_float(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<const float*>(src)[i];
}
void f32_from_float(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) static_cast<float*>(dst)[i] = src[i];
}
void f16_to_float(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(static_cast<const uint16_t*>(src)[i]);
}
void f16_from_float(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = f32_to_f16(src[i]);
}
void bf16_to_float(const void* src, float* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
}
void bf16_from_float(const float* src, void* dst, int64_t n) {
  for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = f32_to_bf16(src[i]);
}

constexpr int16_t kNone = -1;

const TypeTraits kTraits[] = {
    {TensorType::F32, f32_to_float, f32_from_float, TensorType::F32, nullptr, {kNone, kNone}},
    {TensorType::F16, f16_to_float, f16_from_float, TensorType::F32, nullptr, {kNone, kNone}},
    {TensorType::BF16, bf16_to_float, bf16_from_float, TensorType::F32, nullptr, {kNone, kNone}},
    {TensorType::Q8_0, to_float_as<BlockQ8_0, detail::dequantize_row_q8_0>,
     from_float_as<BlockQ8_0, detail::quantize_row_q8_0_ref>, TensorType::Q8_0,
     dot_as<BlockQ8_0, BlockQ8_0, vec_dot_q8_0_q8_0>, {int16_t(offsetof(BlockQ8_0, d)), kNone}},
    {TensorType::Q4_K, to_float_as<BlockQ4_K, detail::dequantize_row_q4_K>,
     from_float_as<BlockQ4_K, detail::quantize_row_q4_K_ref>, TensorType::Q8_K,
     dot_as<BlockQ4_K, BlockQ8_K, vec_dot_q4_K_q8_K_repack_gemv>,
     {int16_t(offsetof(BlockQ4_K, d)), int16_t(offsetof(BlockQ4_K, dmin))}},
    {TensorType::Q5_K, to_float_as<BlockQ5_K, detail::dequantize_row_q5_K>,
     from_float_as<BlockQ5_K, detail::quantize_row_q5_K_ref>, TensorType::Q8_K,
     dot_as<BlockQ5_K, BlockQ8_K, vec_dot_q5_K_q8_K>,
     {int16_t(offsetof(BlockQ5_K, d)), int16_t(offsetof(BlockQ5_K, dmin))}},
    {TensorType::Q6_K, to_float_as<BlockQ6_K, detail::dequantize_row_q6_K>,
     from_float_as<BlockQ6_K, detail::quantize_row_q6_K_ref>, TensorType::Q8_K,
     dot_as<BlockQ6_K, BlockQ8_K, vec_dot_q6_K_q8_K>, {int16_t(offsetof(BlockQ6_K, d)), kNone}},
    // Activation-only: llama.cpp quantizes it with quantize_row_q8_K, not as a weight.
    {TensorType::Q8_K, to_float_as<BlockQ8_K, detail::dequantize_row_q8_K>, nullptr, TensorType::F32, nullptr,
     {kNone, kNone}},
};

}  // namespace

const TypeTraits* type_traits(TensorType t) {
  for (const TypeTraits& row : kTraits)
    if (row.type == t) return &row;
  return nullptr;
}

}  // namespace ckjit::quant
