#include "graph/text_model.h"

#include <algorithm>
#include <map>

#include "jit/isa_select.h"
#include "jit/isa_target.h"
#include "jit/packed_weights.h"
#include "runtime/error.h"

namespace ckjit::graph {

namespace {
const float* f32_data(const gguf::TensorInfo* t) { return reinterpret_cast<const float*>(t->data); }
}  // namespace

LinearSetup ModelOptions::default_linear_setup() {
  LinearSetup s;
  s.isa = jit::runtime_isa();
  return s;
}

double TextModel::load_bytes(const gguf::GgufFile& f) {
  const bool tied = f.find_tensor("output.weight") == nullptr;
  double bytes = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    const bool embd = t.name == "token_embd.weight";
    if (t.n_dims >= 2 && (!embd || tied)) bytes += double(t.n_bytes);
  }
  return bytes;
}

TextModel::TextModel(const gguf::GgufFile& f, const ModelOptions& options, Workers& pool)
    : hp_(read_hparams(f)), opt_(options) {
  tensors_ = find_tensors(f, hp_);
  const jit::RepackPoolScope repack_on(pool.pool());  // the repacks use the model's pinned workers
  if (hp_.head_dim % 8 != 0 || hp_.head_dim > kMaxHeadDim)
    throw Error(f.name() + ": head dim " + std::to_string(hp_.head_dim) + " is not a multiple of 8 up to " + std::to_string(kMaxHeadDim));
  if (!opt_.linear.planner && opt_.linear.allow_jit) {
    // The cost model alone, for the ISA this model was given (the machine is described once per process).
    own_planner_ = std::make_unique<LinearPlanner>(jit::IsaTarget{opt_.linear.isa, ""}.applied_to(topo::this_machine()), pool.size());
    opt_.linear.planner = own_planner_.get();
  }
  if (opt_.linear.repack_threads < 1) opt_.linear.repack_threads = pool.size();
  const LinearSetup& ls = opt_.linear;
  LinearSetup gate_setup = ls;
  gate_setup.plan_swiglu = true;
  for (const LayerTensors& t : tensors_.layers) {
    Layer L;
    L.attn_norm = f32_data(t.attn_norm);
    L.q_norm = f32_data(t.q_norm);
    L.k_norm = f32_data(t.k_norm);
    L.ffn_norm = f32_data(t.ffn_norm);
    L.wq = std::make_unique<Linear>(*t.wq, ls);
    L.wk = std::make_unique<Linear>(*t.wk, ls);
    L.wv = std::make_unique<Linear>(*t.wv, ls);
    L.wo = std::make_unique<Linear>(*t.wo, ls);
    L.gate = std::make_unique<Linear>(*t.gate, gate_setup);
    L.up = std::make_unique<Linear>(*t.up, ls);
    L.down = std::make_unique<Linear>(*t.down, ls);
    fused_ffn_ = fused_ffn_ && !Linear::unfused_prefill(*L.gate, *L.up);
    L.gate_up_desc = Linear::swiglu_desc(*L.gate, *L.up);
    layers_.push_back(std::move(L));
  }
  LinearSetup head_setup = ls;
  head_setup.rows_mostly_one = true;
  lm_head_ = std::make_unique<Linear>(*tensors_.output, head_setup);
  output_norm_ = f32_data(tensors_.output_norm);
  const bool llama = ls.llama_decode_order && ls.llama_prefill_order;
  rope_ = std::make_unique<Rope>(hp_.head_dim, hp_.rope_base, hp_.rope_sections.data(), ls.isa,
                                 llama ? RopeAngles::Libm : RopeAngles::Portable);
  attention_ = std::make_unique<Attention>(ls.isa);
}

TextModel::~TextModel() = default;

int64_t TextModel::prepare_scratch_bytes(int64_t m) const {
  int64_t b = LinearGroup{lm_head_.get()}.scratch_bytes(m);
  for (const Layer& L : layers_) {
    b = std::max({b, LinearGroup{L.wq.get(), L.wk.get(), L.wv.get()}.scratch_bytes(m), LinearGroup{L.wo.get()}.scratch_bytes(m),
                  LinearGroup{L.gate.get(), L.up.get()}.scratch_bytes(m), LinearGroup{L.down.get()}.scratch_bytes(m)});
  }
  return b;
}

bool TextModel::uses_reference() const {
  bool any = lm_head_->uses_reference();
  for (const Layer& L : layers_)
    for (const Linear* l : {L.wq.get(), L.wk.get(), L.wv.get(), L.wo.get(), L.gate.get(), L.up.get(), L.down.get()})
      any = any || l->uses_reference();
  return any;
}

std::vector<std::string> TextModel::plan_report() const {
  if (!opt_.linear.planner) return {"plans: none (no JIT kernels)"};
  return opt_.linear.planner->report();
}

std::vector<std::string> TextModel::dtype_report() const {
  // Group by (role, description) so the report stays one line per kind of weight.
  std::map<std::string, int> lines;
  auto add = [&](const char* role, const Linear& l) { lines[std::string(role) + ": " + l.describe()]++; };
  for (const Layer& L : layers_) {
    add("attn_q", *L.wq);
    add("attn_k", *L.wk);
    add("attn_v", *L.wv);
    add("attn_output", *L.wo);
    add("ffn_gate", *L.gate);
    add("ffn_up", *L.up);
    add("ffn_down", *L.down);
  }
  add(hp_.tied_output ? "output (tied token_embd)" : "output", *lm_head_);
  std::vector<std::string> out;
  out.push_back("token_embd: " + std::string(tensors_.token_embd->type.name) + " row gather + dequantize");
  for (auto& [text, n] : lines) out.push_back(text + "  x" + std::to_string(n));
  out.push_back(std::string("gate/up: ") + (fused_ffn_ ? "fused Gate-Up SwiGLU JIT kernel" : "two matmuls + silu") +
                (!layers_.empty() && Linear::llama_swiglu_decode(*layers_[0].gate, *layers_[0].up)
                     ? "; llama.cpp's swiglu order"
                     : ""));
  out.push_back(std::string("attention: ") + attention_->impl() + " (llama.cpp's flash-attention row order)");
  return out;
}

}  // namespace ckjit::graph
