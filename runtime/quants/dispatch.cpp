// Row-level entry points: the type's row of the traits table, after checking the row length.
#include <string>

#include "runtime/error.h"
#include "runtime/quants/quant_internal.h"
#include "runtime/quants/type_traits.h"

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
  const TypeTraits* t = type_traits(type);
  if (!t) throw Error("dequantize_row: tensor type " + tensor_type_name(int32_t(type)) + " is not supported");
  check_row(type, n, "dequantize_row");
  t->to_float(src, dst, n);
}

void quantize_row(TensorType type, const float* src, void* dst, int64_t n) {
  const TypeTraits* t = type_traits(type);
  if (!t || !t->from_float)
    throw Error("quantize_row: tensor type " + tensor_type_name(int32_t(type)) +
                " has no weight quantizer (Q8_K is activation-only: use quantize_row_q8_K)");
  check_row(type, n, "quantize_row");
  t->from_float(src, dst, n);
}

}  // namespace ckjit::quant
