#include "jit/planner/model_shapes.h"

#include <algorithm>

#include "runtime/error.h"

namespace ckjit::planner {
namespace {

bool is_layer0_matrix(const gguf::TensorInfo& t) {
  const std::string_view n = t.name;
  return n.starts_with("blk.0.") && n.ends_with(".weight") && t.n_dims == 2;
}

}  // namespace

std::vector<ModelOpShape> model_op_shapes(const gguf::GgufFile& f, int64_t prefill_rows) {
  if (prefill_rows < 1) throw Error("prefill rows must be at least 1");
  const gguf::TensorInfo* gate = f.find_tensor("blk.0.ffn_gate.weight");
  const gguf::TensorInfo* up = f.find_tensor("blk.0.ffn_up.weight");
  if ((gate == nullptr) != (up == nullptr))
    throw Error(f.name() + ": blk.0 has " + (gate ? "ffn_gate" : "ffn_up") + " without " + (gate ? "ffn_up" : "ffn_gate"));
  if (gate && (gate->n_dims != 2 || up->n_dims != 2 || gate->ne != up->ne || gate->type.type != up->type.type))
    throw Error(f.name() + ": blk.0.ffn_gate " + gate->shape_string() + " " + gate->type.name + " and ffn_up " +
                up->shape_string() + " " + up->type.name + " differ; they must match to fuse into gate_up_swiglu");

  struct Weight {
    OpKind kind;
    TensorType type;
    int64_t n, k;
    std::string tensors;
  };
  std::vector<Weight> weights;
  for (const auto& t : f.tensors()) {
    if (!is_layer0_matrix(t) || &t == up) continue;
    std::string name(t.name);
    if (&t == gate) name += "+" + std::string(up->name);
    weights.push_back({&t == gate ? OpKind::gate_up_swiglu : OpKind::gemm, t.type.type, t.ne[1], t.ne[0], name});
  }
  if (weights.empty()) throw Error(f.name() + ": no 2-D blk.0.*.weight tensors: not a decoder model this tuner knows");

  std::vector<ModelOpShape> out;
  for (int64_t m : {prefill_rows, int64_t(1)}) {
    for (const auto& w : weights) {
      OpShape s;
      s.kind = w.kind == OpKind::gemm && m == 1 ? OpKind::gemv : w.kind;
      s.wtype = w.type;
      s.m = m, s.n = w.n, s.k = w.k;
      try {
        validate(s);
      } catch (const Error& e) {
        throw Error(f.name() + ": " + w.tensors + ": " + e.what());
      }
      auto same = std::find_if(out.begin(), out.end(), [&](const ModelOpShape& o) { return o.shape == s; });
      if (same != out.end()) same->tensors += ", " + w.tensors;
      else out.push_back({s, w.tensors});
    }
  }
  return out;
}

}  // namespace ckjit::planner
