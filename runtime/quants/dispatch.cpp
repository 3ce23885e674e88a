// Row-level entry points: pick the per-type routine and validate the row length.
#include <string>

#include "runtime/error.h"
#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
namespace {

void check_row(TensorType type, int64_t n, const char* what) {
  const TensorTypeInfo& info = tensor_type_info(type);
  if (n < 0 || n % info.block_elems != 0)
    throw Error(std::string(what) + ": row of " + std::to_string(n) + " elements is not a multiple of the " +
                info.name + " block size " + std::to_string(info.block_elems));
}

}  // namespace

void dequantize_row(TensorType type, const void* src, float* dst, int64_t n) {
  switch (type) {
    case TensorType::F32: check_row(type, n, "dequantize_row");
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<const float*>(src)[i];
      return;
    case TensorType::F16: check_row(type, n, "dequantize_row");
      for (int64_t i = 0; i < n; ++i) dst[i] = f16_to_f32(static_cast<const uint16_t*>(src)[i]);
      return;
    case TensorType::BF16: check_row(type, n, "dequantize_row");
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(static_cast<const uint16_t*>(src)[i]);
      return;
    case TensorType::Q8_0: check_row(type, n, "dequantize_row");
      return detail::dequantize_row_q8_0(static_cast<const BlockQ8_0*>(src), dst, n);
    case TensorType::Q4_K: check_row(type, n, "dequantize_row");
      return detail::dequantize_row_q4_K(static_cast<const BlockQ4_K*>(src), dst, n);
    case TensorType::Q5_K: check_row(type, n, "dequantize_row");
      return detail::dequantize_row_q5_K(static_cast<const BlockQ5_K*>(src), dst, n);
    case TensorType::Q6_K: check_row(type, n, "dequantize_row");
      return detail::dequantize_row_q6_K(static_cast<const BlockQ6_K*>(src), dst, n);
    case TensorType::Q8_K: check_row(type, n, "dequantize_row");
      return detail::dequantize_row_q8_K(static_cast<const BlockQ8_K*>(src), dst, n);
    default: break;
  }
  throw Error("dequantize_row: tensor type " + tensor_type_name(int32_t(type)) + " is not supported");
}

void quantize_row(TensorType type, const float* src, void* dst, int64_t n) {
  switch (type) {
    case TensorType::F32: check_row(type, n, "quantize_row");
      for (int64_t i = 0; i < n; ++i) static_cast<float*>(dst)[i] = src[i];
      return;
    case TensorType::F16: check_row(type, n, "quantize_row");
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = f32_to_f16(src[i]);
      return;
    case TensorType::BF16: check_row(type, n, "quantize_row");
      for (int64_t i = 0; i < n; ++i) static_cast<uint16_t*>(dst)[i] = f32_to_bf16(src[i]);
      return;
    case TensorType::Q8_0: check_row(type, n, "quantize_row");
      return detail::quantize_row_q8_0_ref(src, static_cast<BlockQ8_0*>(dst), n);
    case TensorType::Q4_K: check_row(type, n, "quantize_row");
      return detail::quantize_row_q4_K_ref(src, static_cast<BlockQ4_K*>(dst), n);
    case TensorType::Q5_K: check_row(type, n, "quantize_row");
      return detail::quantize_row_q5_K_ref(src, static_cast<BlockQ5_K*>(dst), n);
    case TensorType::Q6_K: check_row(type, n, "quantize_row");
      return detail::quantize_row_q6_K_ref(src, static_cast<BlockQ6_K*>(dst), n);
    default: break;
  }
  throw Error("quantize_row: tensor type " + tensor_type_name(int32_t(type)) +
              " has no weight quantizer (Q8_K is activation-only: use quantize_row_q8_K)");
}

}  // namespace ckjit::quant
