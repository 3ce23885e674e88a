#include "pair/model.h"

#include <chrono>
#include <future>

#include "jit/planner/profile.h"
#include "pair/mmproj_search.h"
#include "pair/pair_checks.h"
#include "runtime/error.h"
#include "runtime/structured/gbnf.h"
#include "runtime/structured/json_schema.h"
#include "runtime/tokenizer/gguf_vocab.h"
#include "vision/vision_hparams.h"

namespace ckjit::pair {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

Model::~Model() = default;

std::shared_ptr<const Model> Model::load(const LoadOptions& o) {
  auto progress = [&](float f) {
    if (o.progress) o.progress(f);
  };
  const auto t0 = Clock::now();
  progress(0.0f);
  std::shared_ptr<Model> m(new Model);
  m->isa_ = jit::IsaTarget::resolve(o.max_isa);
  m->machine_ = m->isa_.applied_to(topo::this_machine());
  m->threads_ = o.threads > 0 ? o.threads : std::max(1, m->machine_.usable_cpus);
  m->plan_rows_ = std::max<int64_t>(1, o.plan_rows);
  m->model_path_ = o.model_path;
  require_readable(o.model_path, "model");
  if (!o.mmproj_path.empty()) require_readable(o.mmproj_path, "mmproj");
  std::optional<vision::VisionHparams> vhp;
  const graph::Hparams text_hp = classify_errors(ErrorKind::bad_model, [&] {
    m->file_.emplace(gguf::GgufFile::open(o.model_path));
    return graph::read_hparams(*m->file_);  // architecture and keys first: clearer errors than the tokenizer's
  });
  if (!o.mmproj_path.empty()) {
    m->mmproj_path_ = o.mmproj_path;
  } else if (o.want_vision && !(o.vision_optional && !has_mmproj_beside(o.model_path))) {
    const MmprojFound found = find_mmproj_beside(o.model_path, text_hp, o.wanted_by);
    m->mmproj_path_ = found.path, m->mmproj_note_ = found.note;
  }
  if (!m->mmproj_path_.empty()) {
    vhp = classify_errors(ErrorKind::bad_model, [&] {
      m->mmproj_.emplace(gguf::GgufFile::open(m->mmproj_path_));
      return vision::read_vision_hparams(*m->mmproj_);
    });
    check_pair(*vhp, m->mmproj_path_, text_hp, o.model_path);
  }
  // Before the repack (seconds on a large model): the weights' copies must fit.
  if (o.check_memory)
    require_load_memory(*m->file_, text_hp, m->mmproj_ ? &*m->mmproj_ : nullptr, vhp ? &*vhp : nullptr, o.vision_precision,
                        o.planned_sessions);
  progress(0.1f);
  // The tokenizer (~80 ms to build) is built while the weights repack, on a thread started before
  // the pool pins this one (so it may run on any cpu).
  const gguf::GgufFile& file = *m->file_;
  auto tok_built = std::async(std::launch::async, [&file] { return tok::Tokenizer(tok::vocab_from_gguf(file)); });
  std::unique_ptr<Workers> own_pool;
  Workers* pool = o.pool;
  if (!pool) pool = (own_pool = Workers::for_budget(m->machine_, m->threads_)).get();
  m->threads_ = pool->size();
  // A stale, corrupt or foreign profile is reported and ignored, never fatal.
  ProfileLoad profile;
  if (o.use_profile) {
    profile = load_profile_for(m->machine_);
    m->profile_note_ = describe_profile_load(profile);
  }
  m->planner_ = std::make_unique<graph::LinearPlanner>(m->machine_, m->threads_, profile.profile, profile.path);
  m->clocks_.open_ms = ms_since(t0);

  const auto t_repack = Clock::now();
  m->clocks_.jit_before = jit::emit_clock();
  graph::ModelOptions mopt;
  mopt.linear.isa = m->isa_.isa;
  mopt.linear.allow_jit = o.allow_jit;
  mopt.linear.llama_decode_order = o.llama_decode_order;
  mopt.linear.llama_prefill_order = o.llama_prefill_order;
  mopt.linear.repack_threads = m->threads_;
  mopt.linear.plan_rows = m->plan_rows_;
  mopt.linear.planner = m->planner_.get();
  try {
    m->text_ = classify_errors(ErrorKind::bad_model, [&] { return std::make_unique<graph::TextModel>(file, mopt, *pool); });
    progress(0.7f);
    if (vhp) m->vision_ = classify_errors(ErrorKind::bad_model, [&] { return std::make_unique<vision::VisionModel>(*m->mmproj_, m->isa_.isa, *pool, o.vision_precision); });
    progress(0.9f);
  } catch (...) {
    tok_built.wait();  // it reads the file this frame owns
    throw;
  }
  m->tok_ = std::make_unique<tok::Tokenizer>(classify_errors(ErrorKind::bad_model, [&] { return tok_built.get(); }));
  m->clocks_.repack_ms = ms_since(t_repack);  // the tokenizer counts if it outlasts the models
  m->clocks_.jit_after = jit::emit_clock();
  if (m->tok_->n_tokens() > m->hparams().n_vocab)
    throw Error(o.model_path + ": the tokenizer has " + std::to_string(m->tok_->n_tokens()) + " tokens but token_embd only " +
                    std::to_string(m->hparams().n_vocab) + " rows",
                ErrorKind::bad_model);
  progress(1.0f);
  return m;
}

std::shared_ptr<const structured::Grammar> Model::grammar_of(structured::Dfa dfa, const std::string& source) const {
  std::call_once(token_bytes_once_, [&] {
    token_bytes_ = std::make_shared<const structured::TokenBytes>(*tok_, int32_t(hparams().n_vocab));
  });
  auto g = std::make_shared<structured::Grammar>();
  g->dfa = std::make_shared<const structured::Dfa>(std::move(dfa));
  g->vocab = token_bytes_;
  g->source = source;
  return g;
}

std::shared_ptr<const structured::Grammar> Model::json_grammar(std::string_view schema, const std::string& source) const {
  return grammar_of(structured::compile_json_schema(schema), source);
}

std::shared_ptr<const structured::Grammar> Model::gbnf_grammar(std::string_view gbnf, const std::string& source) const {
  return grammar_of(structured::compile_gbnf(gbnf), source);
}

}  // namespace ckjit::pair
