#pragma once
// The op shapes `ckjit tune --model m.gguf` measures: the matrix weights of the first decoder
// layer (blk.0.*, every layer has the same shapes), each as y = x · W^T with K = ne[0], N = ne[1]
// and the tensor's own type; ffn_gate + ffn_up become one fused gate_up_swiglu. Each weight gives
// a prefill GEMM (M = prefill_rows) and a decode GEMV (M = 1). Identical shapes are listed once.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_reader.h"
#include "runtime/op_shape.h"

namespace ckjit::planner {

struct ModelOpShape {
  OpShape shape;
  std::string tensors;  // "blk.0.ffn_gate.weight+blk.0.ffn_up.weight"
};

// Throws ckjit::Error when the file has no 2-D blk.0 weights, gate and up disagree, or a shape
// is not a valid op (e.g. K not a multiple of the type's block).
std::vector<ModelOpShape> model_op_shapes(const gguf::GgufFile& f, int64_t prefill_rows);

}  // namespace ckjit::planner
