#pragma once
// The weight types the JIT matmuls take, as a plain list. Code that only checks a file (graph's
// hparams and its fuzzer) reads this and links no emitter; weight_kernels.cpp and each generator's
// emitter table (x86: jit/x86/emit.cpp) have one row per entry, in this order (a static_assert in each keeps
// them together).
#include <string>

#include "runtime/tensor_type.h"

namespace ckjit::jit {

inline constexpr TensorType kJitWeightTypes[] = {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K,
                                                 TensorType::Q8_0};

constexpr bool has_weight_kernels(TensorType w) {
  for (TensorType t : kJitWeightTypes)
    if (t == w) return true;
  return false;
}

// "Q4_K, Q5_K, Q6_K, Q8_0": for error messages.
inline std::string jit_weight_type_names() {
  std::string s;
  for (TensorType t : kJitWeightTypes) s += std::string(s.empty() ? "" : ", ") + tensor_type_info(t).name;
  return s;
}

}  // namespace ckjit::jit
