#include "xray/runner.h"

#include <algorithm>

#include "graph/checkpoints.h"
#include "jit/isa_select.h"
#include "runtime/error.h"
#include "runtime/tokenizer/gguf_vocab.h"
#include "topology/machine.h"
#include "vision/image_input.h"

namespace ckjit::xray {

namespace {
// Restores the generated kernels when a run ends, also by an exception.
struct ExecutorScope {
  explicit ExecutorScope(jit::Executor e) { jit::set_executor(e); }
  ~ExecutorScope() { jit::set_executor(jit::Executor::generated); }
};
}  // namespace

Runner::Runner(const RunnerOptions& o) : opt_(o) {
  const topo::Machine machine = topo::detect_machine();
  pool_ = graph::Workers::for_budget(machine, o.threads > 0 ? o.threads : std::max(1, machine.usable_cpus));
  file_.emplace(gguf::GgufFile::open(o.model));
  graph::read_hparams(*file_);
  std::optional<vision::VisionHparams> vhp;
  if (!o.image.empty()) {
    if (o.mmproj.empty()) throw Error("--image " + o.image + ": an image needs --mmproj (the vision projector GGUF of the model)");
    mmproj_file_.emplace(gguf::GgufFile::open(o.mmproj));
    vhp = vision::read_vision_hparams(*mmproj_file_);
  }
  graph::ModelOptions mopt;
  mopt.linear.llama_prefill_order = o.llama_order;
  mopt.linear.repack_threads = pool_->size();
  mopt.linear.plan_rows = std::min(o.n_ubatch, o.n_ctx);
  model_ = std::make_unique<graph::TextModel>(*file_, mopt, *pool_);
  if (vhp) {
    vision::check_pair(*vhp, o.mmproj, model_->hparams(), o.model);
    vision_ = std::make_unique<vision::VisionModel>(*mmproj_file_, jit::runtime_isa(), *pool_);
  }
  tok_ = std::make_unique<tok::Tokenizer>(tok::vocab_from_gguf(*file_));
}

Runner::~Runner() = default;

int64_t Runner::n_vision_layers() const { return vision_ ? vision_->hparams().n_layer : 0; }
int64_t Runner::n_deepstack() const { return vision_ ? vision_->hparams().n_deepstack() : 0; }

RunResult Runner::run(jit::Executor ex, const std::vector<int32_t>& forced, int n_predict, Tap& tap) {
  ExecutorScope scope(ex);
  graph::SessionOptions so;
  so.n_ctx = opt_.n_ctx;
  so.n_ubatch = std::min(opt_.n_ubatch, opt_.n_ctx);
  so.attention = opt_.attention;
  graph::Session session(*model_, so, *pool_);
  session.set_tap(&tap);
  graph::GenerateOptions go;
  go.n_predict = n_predict;
  go.forced = forced;
  go.ignore_eos = true;  // the trajectory's length is the caller's, not the model's
  RunResult out;
  graph::GenerateResult g;
  if (vision_) {
    const auto pp = vision_->preprocess_params(opt_.image_min_tokens, opt_.image_max_tokens);
    vision::PreparedImage im = vision::prepare_image(opt_.image, pp);
    std::vector<vision::ImageEmbedding> emb;
    emb.push_back(vision_->encode(*pool_, im.pixels, nullptr, &tap));
    out.n_patches = emb.back().n_rows() * 4;
    graph::PromptOptions po = opt_.prompt;
    po.text = graph::with_media_markers(po.text, emb.size());
    const graph::BridgePrompt bridge =
        graph::build_bridge_prompt(*tok_, graph::prompt_text(*file_, po), vision::image_rows(emb),
                                   model_->hparams().n_embd, model_->hparams().n_deepstack);
    g = graph::generate(session, *tok_, bridge, go, {});
  } else {
    g = graph::generate(session, *tok_, graph::prompt_tokens(*tok_, *file_, opt_.prompt), go, {});
  }
  out.generated = g.generated;
  out.n_rows = session.n_past();
  return out;
}

DumpShape Runner::shape(const RunResult& r) const {
  const graph::Hparams& hp = model_->hparams();
  DumpShape s;
  s.n_layer = hp.n_layer, s.n_embd = hp.n_embd, s.q_width = hp.q_width(), s.kv_width = hp.kv_width();
  s.n_ff = hp.n_ff, s.n_vocab = hp.n_vocab, s.n_deepstack = hp.n_deepstack, s.n_rows = r.n_rows;
  if (vision_) {
    const vision::VisionHparams& v = vision_->hparams();
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
