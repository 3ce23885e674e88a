#include "runtime/tensor_type.h"

#include "runtime/error.h"

namespace ckjit {
namespace {

// Block sizes from ggml-common.h (see ../shared/spec/quants.md §1).
constexpr TensorTypeInfo kTypes[] = {
    {TensorType::F32, "F32", 1, 4, true},       {TensorType::F16, "F16", 1, 2, true},
    {TensorType::Q4_0, "Q4_0", 32, 18, true},   {TensorType::Q4_1, "Q4_1", 32, 20, true},
    {TensorType::Q5_0, "Q5_0", 32, 22, true},   {TensorType::Q5_1, "Q5_1", 32, 24, true},
    {TensorType::Q8_0, "Q8_0", 32, 34, true},   {TensorType::Q8_1, "Q8_1", 32, 36, false},
    {TensorType::Q2_K, "Q2_K", 256, 84, true},  {TensorType::Q3_K, "Q3_K", 256, 110, true},
    {TensorType::Q4_K, "Q4_K", 256, 144, true}, {TensorType::Q5_K, "Q5_K", 256, 176, true},
    {TensorType::Q6_K, "Q6_K", 256, 210, true}, {TensorType::Q8_K, "Q8_K", 256, 292, false},
    {TensorType::I8, "I8", 1, 1, true},         {TensorType::I16, "I16", 1, 2, true},
    {TensorType::I32, "I32", 1, 4, true},       {TensorType::I64, "I64", 1, 8, true},
    {TensorType::F64, "F64", 1, 8, true},       {TensorType::BF16, "BF16", 1, 2, true},
};

}  // namespace

std::optional<TensorTypeInfo> tensor_type_info(int32_t id) {
  for (const auto& t : kTypes)
    if (int32_t(t.type) == id) return t;
  return std::nullopt;
}

const TensorTypeInfo& tensor_type_info(TensorType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  throw Error("internal: tensor type " + std::to_string(int(type)) + " missing from the type table");
}

std::string tensor_type_name(int32_t id) {
  if (auto t = tensor_type_info(id)) return t->name;
  return "type#" + std::to_string(id);
}

}  // namespace ckjit
