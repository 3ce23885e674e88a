#include "graph/session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "graph/decoder_forward.h"
#include "graph/layer_ops.h"
#include "jit/kernels.h"
#include "runtime/error.h"
#include "topology/memory.h"

namespace ckjit::graph {

namespace {
// A session's large buffers, estimated before any is allocated: the f16 KV cache and the chunk
// activations (graph/activations.h: the arena the session reserves, plus a row of logits).
void check_memory_for(const TextModel& model, int64_t n_ctx, int64_t M, KvLayout layout, int workers,
                      int64_t att_scratch_per_worker) {
  const double mib = 1048576.0;
  const SessionBytes b = session_bytes(model, n_ctx, layout, M, workers, att_scratch_per_worker);
  char what[160];
  std::snprintf(what, sizeof what, "this context (KV cache for $n_ctx %lld: %.0f MiB, activations for $n_batch %lld: %.0f MiB)",
                (long long)n_ctx, b.kv / mib, (long long)M, b.activations / mib);
  topo::require_memory(b.kv + b.activations, what, "lower $n_ctx or $n_batch");
}
}  // namespace

Session::Session(const TextModel& model, const SessionOptions& options, Workers& pool)
    : model_(model), opt_(options), pool_(pool) {
  const Hparams& hp = model_.hparams();
  if (opt_.n_ctx < 1) throw Error("context length must be at least 1");
  if (opt_.n_ubatch < 1) throw Error("batch size must be at least 1");
  opt_.n_ubatch = std::min(opt_.n_ubatch, opt_.n_ctx);
  const bool llama_attention = opt_.attention == AttentionOrder::llama;
  if (!llama_attention && model_.options().linear.llama_prefill_order)
    throw Error("the tiled attention and llama.cpp's token-by-token order (llama_prefill_order, --llama-order) exclude each other", ErrorKind::invalid_argument);
  const KvLayout layout = llama_attention ? KvLayout::rows : KvLayout::panels;
  // The memory check first (the attention's scratch is part of the arena), then the tiled
  // attention's kernels (no large buffer; their value-panel stride is the context's slots).
  const AttentionShape shape{hp.n_head, hp.n_head_kv, hp.head_dim, 1.0f / std::sqrt(float(hp.head_dim))};
  att_scratch_per_worker_ =
      llama_attention ? attention_scratch_floats(hp.head_dim, opt_.n_ctx) : TiledAttention::scratch_floats(shape);
  if (opt_.check_memory) check_memory_for(model_, opt_.n_ctx, opt_.n_ubatch, layout, pool_.size(), att_scratch_per_worker_);
  if (!llama_attention) {
    // The widest op=dense path this process may run (CKJIT_MAX_ISA caps it); a head dim that is
    // not a whole number of its panels takes the 8-key path.
    jit::IsaPath path = jit::widest_dense_path(model_.options().linear.isa);
    if (hp.head_dim % jit::panel_cols(path) != 0) path = jit::IsaPath::Avx2;
    tiled_ = std::make_unique<TiledAttention>(shape, KvCache::padded_slots(opt_.n_ctx), path, model_.options().linear.isa);
    if (tiled_->scratch_floats() != att_scratch_per_worker_) throw Error("tiled attention: scratch estimate differs");
  }
  kv_ = std::make_unique<KvCache>(hp.n_layer, opt_.n_ctx, hp.n_head_kv, hp.head_dim, layout, tiled_ ? tiled_->panel() : 8,
                                  model_.options().linear.isa);
  next_after_.assign(size_t(opt_.n_ctx), 0);  // a decode step allocates nothing

  // Activation arena for chunks of up to n_ubatch rows.
  s_ = reserve_activations(arena_, model_, opt_.n_ubatch, pool_.size(), att_scratch_per_worker_);
  arena_.commit();
  logits_.resize(size_t(hp.n_vocab));
  want_.reserve(size_t(opt_.n_ubatch));
}

Session::~Session() = default;

void Session::validate(const Batch& b) const {
  const Hparams& hp = model_.hparams();
  if (b.empty()) throw Error("decode: empty batch");
  const size_t n = b.pos.size();
  if (b.token.size() != n || b.embd.size() != n || b.deepstack.size() != n || b.logits.size() != n)
    throw Error("decode: batch columns of different lengths");
  if (n_past_ + b.size() > opt_.n_ctx)
    throw Error("context full: " + std::to_string(n_past_) + " + " + std::to_string(b.size()) +
                " rows exceed the context length " + std::to_string(opt_.n_ctx));
  for (size_t i = 0; i < n; ++i) {
    if (b.token[i] >= 0) {
      if (b.token[i] >= hp.n_vocab) throw Error("token id " + std::to_string(b.token[i]) + " is outside the vocabulary");
    } else if (!b.embd[i]) {
      throw Error("decode: row " + std::to_string(i) + " has neither a token id nor an embedding");
    }
    if (b.deepstack[i] && hp.n_deepstack == 0)
      throw Error("decode: row " + std::to_string(i) + " carries deepstack slices but the model has no deepstack layers");
  }
}

Logits Session::decode(const Batch& b) {
  validate(b);
  const int64_t V = model_.hparams().n_vocab;
  const int64_t want = b.n_logits();
  if (size_t(want * V) > logits_.size()) logits_.resize(size_t(want * V));
  int64_t out_row = 0;
  for (int64_t begin = 0; begin < b.size(); begin += opt_.n_ubatch) {
    if (abort_ && abort_()) throw Error("decoding was aborted (abort callback)", ErrorKind::cancelled);
    const int64_t m = std::min(opt_.n_ubatch, b.size() - begin);
    int64_t rows = 0;
    for (int64_t r = 0; r < m; ++r) rows += b.logits[size_t(begin + r)];
    forward_chunk(model_, pool_, ForwardState{*kv_, tiled_.get(), arena_, s_, att_scratch_per_worker_, want_},
                  Observers{profile_, tap_, n_past_}, b, begin, m, n_past_, logits_.data() + out_row * V);
    for (int64_t r = 0; r < m; ++r) count_row(b.pos[size_t(begin + r)]);
    out_row += rows;
  }
  return Logits{logits_.data(), want, V};
}

RowSite Session::next_site() {
  if (n_past_ + 1 > opt_.n_ctx)
    throw Error("context full: " + std::to_string(n_past_) + " + 1 rows exceed the context length " + std::to_string(opt_.n_ctx));
  return RowSite{kv_.get(), tiled_.get(), n_past_};
}

void Session::count_row(const Position& p) {
  ++n_past_;
  next_pos_ = std::max<int64_t>(next_pos_, int64_t(p.max_thw()) + 1);
  next_after_[size_t(n_past_ - 1)] = next_pos_;
}

void Session::copy_prefix_from(const Session& src, int64_t n) {
  if (&src.model_ != &model_) throw Error("copy prefix: the sessions are of different models", ErrorKind::invalid_argument);
  if (!kv_->same_shape(*src.kv_) || (tiled_ == nullptr) != (src.tiled_ == nullptr))
    throw Error("copy prefix: the sessions keep their KV caches differently (attention order)", ErrorKind::invalid_argument);
  if (n < 0 || n > src.n_past_ || n > opt_.n_ctx)
    throw Error("copy prefix: " + std::to_string(n) + " rows asked; the source holds " + std::to_string(src.n_past_) +
                    ", this context takes " + std::to_string(opt_.n_ctx),
                ErrorKind::invalid_argument);
  if (&src == this) return truncate(n);
  kv_->copy_prefix(*src.kv_, n);
  std::copy_n(src.next_after_.begin(), n, next_after_.begin());
  n_past_ = n;
  next_pos_ = n == 0 ? 0 : next_after_[size_t(n - 1)];
}

void Session::restore(int64_t n, std::span<const int64_t> next_after, const std::function<void(KvCache&)>& fill) {
  if (n < 0 || n > opt_.n_ctx || int64_t(next_after.size()) != n)
    throw Error("restore: " + std::to_string(n) + " rows do not fit a context of " + std::to_string(opt_.n_ctx),
                ErrorKind::invalid_argument);
  n_past_ = 0, next_pos_ = 0;  // nothing valid while the rows are written
  fill(*kv_);
  for (int64_t l = 0; l < model_.hparams().n_layer; ++l) kv_->seal(l, n);
  std::copy(next_after.begin(), next_after.end(), next_after_.begin());
  n_past_ = n;
  next_pos_ = n == 0 ? 0 : next_after_[size_t(n - 1)];
}

void Session::truncate(int64_t n_rows) {
  if (n_rows < 0 || n_rows > n_past_)
    throw Error("truncate: " + std::to_string(n_rows) + " rows asked, the session holds " + std::to_string(n_past_));
  n_past_ = n_rows;
  next_pos_ = n_rows == 0 ? 0 : next_after_[size_t(n_rows - 1)];
}

}  // namespace ckjit::graph
