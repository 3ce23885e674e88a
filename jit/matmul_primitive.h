#pragma once
// The matmul primitive of a quantized weight: which code multiplies one weight for a class of row
// counts, chosen once at load from an ordered list of implementations, each accepting or declining
// a descriptor (oneDNN's primitive descriptors). graph/linear.cpp asks it and runs what it answers;
// the answer's name is what -v, --profile, --report and `ckjit inspect` print, so a report cannot
// name a kernel that does not run. The list, best first:
//   llama_vec_dot  Q6_K / Q8_0 rows in llama.cpp's ggml_vec_dot order: one-row decode under
//                  llama.cpp's decode order (the default), every row under --llama-order, every row
//                  of a weight that is mostly multiplied one row at a time (the LM head: not repacked)
//   reference      the scalar reference: --no-jit, and Q5_K under --llama-order (its llama.cpp
//                  order has no fast copy yet)
//   jit            the generated kernels of the first ISA path of the load's target (amx, avx512,
//                  avxvnni, avx2: those sharing one packed layout) that serves the op: the planner's
//                  blocks where its plan is for that path, else fixed blocks; AMX declines below a
//                  tile of rows, a path whose emitter rejects the spec (AMX has no GEMV) declines.
//                  For 2..kFewRows rows: fixed AVX-512 blocks that prefetch their weights where
//                  AVX-512 is a path, else the many-row choice. The fused SwiGLU declines under
//                  --no-jit and --llama-order (two matmuls and a swiglu run then).
// Every JIT path has the scalar twins' float order, so which one is chosen never changes a result.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "jit/code_cache.h"
#include "jit/kernel_spec.h"
#include "runtime/tensor_type.h"

namespace ckjit::jit {

// Row counts one choice serves: 1 row (decode), 2..kFewRows (decode steps of several sequences,
// short prompts), more (prefill chunks).
enum class RowClass { one, few, many };
constexpr int64_t kFewRows = 16;
inline RowClass row_class(int64_t m) { return m == 1 ? RowClass::one : m <= kFewRows ? RowClass::few : RowClass::many; }

// The float order asked for: ckjit's own (the generated kernels' and their twins'), llama.cpp's
// decode order for Q6_K / Q8_0 rows (the default), or llama.cpp's order for every row (--llama-order).
enum class FloatOrder { own, llama_decode, llama_exact };

struct MatmulDesc {
  Op op = Op::Gemm;                      // Gemm (one row: GEMV) or SwiGLU (the fused Gate-Up kernel)
  TensorType wtype = TensorType::Q4_K, atype = TensorType::Q8_K;
  int64_t k = 0;
  RowClass rows = RowClass::many;
  int64_t plan_rows = 512;               // the M a many-row choice (and its plan) is made for
  FloatOrder order = FloatOrder::llama_decode;
  bool allow_jit = true;                 // false: the scalar reference (--no-jit)
  bool rows_mostly_one = false;          // the LM head (see above)
  bool need_residual = false;            // also the residual-add epilogue
  std::vector<IsaPath> paths;            // the load's target's paths sharing the packed layout, best first
  std::optional<KernelSpec> planned;     // the kernel of the planner's plan for this op's shape, if any
                                         // (planner::jit_spec_for; jit/planner sits above this file)
};

enum class MatmulImpl { none, llama_vec_dot, reference, jit };

struct MatmulChoice {
  MatmulImpl impl = MatmulImpl::none;
  const JitKernel *store = nullptr, *residual = nullptr;  // jit: the store / SwiGLU and residual-add kernels
  bool planned = false;                  // jit: the plan's blocks (its tiling applies)
  std::vector<std::string> fallbacks;    // why the plan was not used, for the planner's report
  explicit operator bool() const { return impl != MatmulImpl::none; }
};

// Whether Q6_K / Q8_0 rows of `d` run in llama.cpp's vec_dot order (the first implementation).
bool llama_vec_dot_rows(const MatmulDesc& d);
// The first implementation of the list that accepts `d`; impl none where none does (a few-row
// class without AVX-512: the caller takes its many-row choice).
MatmulChoice choose_matmul(const MatmulDesc& d);

}  // namespace ckjit::jit
