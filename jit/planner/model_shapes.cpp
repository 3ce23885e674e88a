#include "jit/planner/model_shapes.h"

#include <algorithm>

#include "runtime/error.h"

namespace ckjit::planner {
namespace {

bool is_layer_matrix(const gguf::TensorInfo& t) {
  const std::string_view n = t.name;
  return n.starts_with("blk.") && n.ends_with(".weight") && t.n_dims == 2;
}

// "blk.7.ffn_up.weight" for ("blk.7.ffn_gate.weight", "ffn_gate", "ffn_up").
std::string sibling(const std::string& name, const char* from, const char* to) {
  const size_t at = name.find(from);
  return at == std::string::npos ? "" : name.substr(0, at) + to + name.substr(at + std::string(from).size());
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
  // Every layer's matrices, as the decoder plans them: each weight's own GEMM / GEMV (ffn_up too,
  // for the unfused orders) and each layer's gate + up as the fused SwiGLU. The layers of a
  // Q4_K_M mix differ in type (attn_v, ffn_down), so layer 0 alone misses shapes.
  for (const auto& t : f.tensors()) {
    if (!is_layer_matrix(t)) continue;
    const std::string name(t.name);
    const gguf::TensorInfo* pair_up = name.find(".ffn_gate.") != std::string::npos ? f.find_tensor(sibling(name, "ffn_gate", "ffn_up")) : nullptr;
    const bool fused = pair_up && pair_up->n_dims == 2 && pair_up->ne == t.ne && pair_up->type.type == t.type.type;
    if (fused) weights.push_back({OpKind::gate_up_swiglu, t.type.type, t.ne[1], t.ne[0], name + "+" + std::string(pair_up->name)});
    else weights.push_back({OpKind::gemm, t.type.type, t.ne[1], t.ne[0], name});
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
