#include "xray/runner.h"

#include <algorithm>

#include "runtime/checkpoints.h"
#include "pair/context.h"
#include "runtime/error.h"
#include "topology/machine.h"

namespace ckjit::xray {

namespace {
// Restores the generated kernels when a run ends, also by an exception.
struct ExecutorScope {
  explicit ExecutorScope(jit::Executor e) { jit::set_executor(e); }
  ~ExecutorScope() { jit::set_executor(jit::Executor::generated); }
};
}  // namespace

Runner::Runner(const RunnerOptions& o) : opt_(o) {
  const topo::Machine& machine = topo::this_machine();
  pool_ = Workers::for_budget(machine, o.threads > 0 ? o.threads : std::max(1, machine.usable_cpus));
  pair::LoadOptions lo;
  lo.model_path = o.model;
  lo.mmproj_path = o.image.empty() ? "" : o.mmproj;
  lo.want_vision = !o.image.empty();
  lo.wanted_by = o.image;
  lo.threads = pool_->size();
  lo.pool = pool_.get();
  lo.use_profile = false;  // the cost model's plans: a comparison does not depend on a tuned file
  lo.llama_prefill_order = o.llama_order;
  lo.plan_rows = std::min(o.n_ubatch, o.n_ctx);
  pair_ = pair::Model::load(lo);
}

Runner::~Runner() = default;

int64_t Runner::n_vision_layers() const { return pair_->vision() ? pair_->vision()->hparams().n_layer : 0; }
int64_t Runner::n_deepstack() const { return pair_->vision() ? pair_->vision()->hparams().n_deepstack() : 0; }

RunResult Runner::run(jit::Executor ex, const std::vector<int32_t>& forced, int n_predict, Tap& tap) {
  ExecutorScope scope(ex);
  pair::ContextOptions co;
  co.n_ctx = opt_.n_ctx;
  co.n_batch = opt_.n_ubatch;
  co.image_min_tokens = opt_.image_min_tokens, co.image_max_tokens = opt_.image_max_tokens;
  co.attention = opt_.attention;
  pair::Context ctx(pair_, co, pool_.get());
  ctx.session().set_tap(&tap);
  graph::GenerateOptions go;
  go.n_predict = n_predict;
  go.forced = forced;
  go.ignore_eos = true;  // the trajectory's length is the caller's, not the model's
  RunResult out;
  pair::Prompt prompt;
  prompt.chat = opt_.prompt.chat;
  prompt.system = opt_.prompt.system;
  if (pair_->vision()) {
    std::vector<vision::PreparedImage> im = ctx.prepare_images({opt_.image});
    prompt.add_image(ctx.encode(im.front(), nullptr, &tap));
    out.n_patches = im.front().n_rows * 4;
  }
  prompt.add_text(opt_.prompt.text);
  const graph::GenerateResult g = ctx.generate(ctx.render(prompt), go, {});
  out.generated = g.generated;
  out.n_rows = ctx.session().n_past();
  return out;
}

DumpShape Runner::shape(const RunResult& r) const {
  const graph::Hparams& hp = pair_->hparams();
  DumpShape s;
  s.n_layer = hp.n_layer, s.n_embd = hp.n_embd, s.q_width = hp.q_width(), s.kv_width = hp.kv_width();
  s.n_ff = hp.n_ff, s.n_vocab = hp.n_vocab, s.n_deepstack = hp.n_deepstack, s.n_rows = r.n_rows;
  if (pair_->vision()) {
    const vision::VisionHparams& v = pair_->vision()->hparams();
    s.v_layers = v.n_layer, s.v_embd = v.n_embd, s.v_ff = v.n_ff, s.v_patches = r.n_patches, s.proj_dim = v.proj_dim;
  }
  return s;
}

std::string Runner::weight_of(const std::string& name) const {
  if (name.size() < 3 || name[0] != 'L') return name == "logits" ? "output.weight (or token_embd.weight, tied)" : "";
  const size_t dot = name.find('.');
  const std::string layer = name.substr(1, dot - 1), what = name.substr(dot + 1);
  const std::string blk = "blk." + layer + ".";
  if (what == "ffn_act") return blk + "ffn_gate.weight, " + blk + "ffn_up.weight";
  const char* w = what == "q" ? "attn_q" : what == "k" ? "attn_k" : what == "v" ? "attn_v" : what == "attn_residual" ? "attn_output"
                  : what == "l_out" ? "ffn_down" : nullptr;
  return w ? blk + w + ".weight" : "";
}

}  // namespace ckjit::xray
