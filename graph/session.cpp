#include "graph/session.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "graph/checkpoints.h"
#include "graph/layer_ops.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "topology/memory.h"

namespace ckjit::graph {

namespace {
// A session's large buffers, estimated before any is allocated: the f16 KV cache and the chunk
// activations (M rows of every intermediate, the attention scratch of each worker).
void check_memory_for(const TextModel& model, const SessionOptions& o, int workers) {
  const Hparams& hp = model.hparams();
  const double mib = 1048576.0;
  const double kv = 2.0 * 2.0 * double(hp.n_layer) * double((o.n_ctx + 7) / 8 * 8) * double(hp.kv_width());
  const double M = double(std::min(o.n_ubatch, o.n_ctx));
  const double act = 4.0 * M * double(4 * hp.n_embd + 2 * hp.q_width() + 2 * hp.kv_width() + 3 * hp.n_ff) +
                     double(model.prepare_scratch_bytes(int64_t(M))) +
                     4.0 * double(workers) * double(attention_scratch_floats(hp.head_dim, o.n_ctx)) + 4.0 * double(hp.n_vocab);
  char what[160];
  std::snprintf(what, sizeof what, "this context (KV cache for -c %lld: %.0f MiB, activations for -b %lld: %.0f MiB)",
                (long long)o.n_ctx, kv / mib, (long long)M, act / mib);
  topo::require_memory(kv + act, what, "lower -c or -b");
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
    throw Error("the tiled attention and llama.cpp's token-by-token order (--llama-order) exclude each other");
  if (opt_.check_memory) check_memory_for(model_, opt_, pool_.size());
  kv_ = std::make_unique<KvCache>(hp.n_layer, opt_.n_ctx, hp.n_head_kv, hp.head_dim,
                                  llama_attention ? KvLayout::rows : KvLayout::panels);
  const AttentionShape shape{hp.n_head, hp.n_head_kv, hp.head_dim, 1.0f / std::sqrt(float(hp.head_dim))};
  if (!llama_attention) tiled_ = std::make_unique<TiledAttention>(shape, kv_->n_pad());

  // Activation arena for chunks of up to M rows.
  const int64_t M = opt_.n_ubatch, E = hp.n_embd, F = hp.n_ff, Q = hp.q_width(), KV = hp.kv_width();
  const size_t f4 = sizeof(float);
  s_.h0 = arena_.reserve("h0", size_t(M * E) * f4);
  s_.h1 = arena_.reserve("h1", size_t(M * E) * f4);
  s_.xn = arena_.reserve("xn", size_t(M * E) * f4);
  s_.prep = arena_.reserve("prepared_inputs", size_t(model_.prepare_scratch_bytes(M)));
  s_.q = arena_.reserve("q", size_t(M * Q) * f4);
  s_.k = arena_.reserve("k", size_t(M * KV) * f4);
  s_.v = arena_.reserve("v", size_t(M * KV) * f4);
  s_.attn = arena_.reserve("attn", size_t(M * Q) * f4);
  s_.ffn = arena_.reserve("ffn", size_t(M * F) * f4);
  // Unfused gate/up scratch: M rows of up, and gate|up of the one decode row.
  s_.ffn_tmp = arena_.reserve("ffn_gate_up", size_t((model_.fused_ffn() ? 2 : std::max<int64_t>(2, M)) * F) * f4);
  att_scratch_per_worker_ = tiled_ ? tiled_->scratch_floats() : attention_scratch_floats(hp.head_dim, opt_.n_ctx);
  s_.att_scratch = arena_.reserve("attention", size_t(pool_.size() * att_scratch_per_worker_) * f4);
  s_.cos = arena_.reserve("rope_cos", size_t(M * hp.head_dim / 2) * f4);
  s_.sin = arena_.reserve("rope_sin", size_t(M * hp.head_dim / 2) * f4);
  arena_.commit();
  logits_.resize(size_t(hp.n_vocab));
  want_.reserve(size_t(M));
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
    const int64_t m = std::min(opt_.n_ubatch, b.size() - begin);
    int64_t rows = 0;
    for (int64_t r = 0; r < m; ++r) rows += b.logits[size_t(begin + r)];
    run_chunk(b, begin, m, logits_.data() + out_row * V);
    out_row += rows;
  }
  for (const Position& p : b.pos) next_pos_ = std::max<int64_t>(next_pos_, int64_t(p.max_thw()) + 1);
  return Logits{logits_.data(), want, V};
}

void Session::run_chunk(const Batch& b, int64_t begin, int64_t m, float* logits_out) {
  const TextModel& md = model_;
  const Hparams& hp = md.hparams();
  const int64_t E = hp.n_embd, F = hp.n_ff, Q = hp.q_width(), KV = hp.kv_width(), D = hp.head_dim;
  const int64_t slot0 = n_past_;
  float* h = arena_.get<float>(s_.h0);
  float* h_next = arena_.get<float>(s_.h1);
  float* xn = arena_.get<float>(s_.xn);
  void* prep = arena_.get<void>(s_.prep);
  float* q = arena_.get<float>(s_.q);
  float* k = arena_.get<float>(s_.k);
  float* v = arena_.get<float>(s_.v);
  float* attn = arena_.get<float>(s_.attn);
  float* ffn = arena_.get<float>(s_.ffn);
  float* cosv = arena_.get<float>(s_.cos);
  float* sinv = arena_.get<float>(s_.sin);
  const float eps = hp.rms_eps;
  const Rope& rope = md.rope();

  const gguf::TensorInfo& te = md.token_embd();
  bool any_deepstack = false;
  for (int64_t r = 0; r < m; ++r) any_deepstack = any_deepstack || b.deepstack[size_t(begin + r)];
  OpProfile* const prof = profile_;
  if (prof) prof->add_rows(prof->phase(), m);
  std::optional<OpTimer> embed_timer(std::in_place, prof, "embed", -1, OpWork{}, OpCall{m});
  pool_.run(size_t(m), [&](size_t rr, int) {
    const int64_t r = int64_t(rr), i = begin + r;
    if (b.token[size_t(i)] >= 0)
      quant::dequantize_row(te.type.type, te.data + int64_t(b.token[size_t(i)]) * int64_t(te.row_bytes()), h + r * E, E);
    else
      std::memcpy(h + r * E, b.embd[size_t(i)], size_t(E) * sizeof(float));
    rope.angles(b.pos[size_t(i)], cosv + r * D / 2, sinv + r * D / 2);
  });
  embed_timer.reset();
  AttentionShape as{hp.n_head, hp.n_head_kv, D, 1.0f / std::sqrt(float(D))};
  // Tapped checkpoints of this chunk's m rows (graph/checkpoints.h); nothing when no tap is set.
  auto publish = [&](int li, const char* what, float* data, int64_t cols) {
    if (tap_) tap_->publish(layer_checkpoint('L', li, what), data, m, cols, cols, slot0);
  };
  if (tap_) tap_->publish("embd", h, m, E, E, slot0);

  for (size_t il = 0; il < md.layers().size(); ++il) {
    const TextModel::Layer& L = md.layers()[il];
    const int li = int(il);
    {
      OpTimer t(prof, "norm", li, {}, {m});
      pool_.run(size_t(m), [&](size_t r, int) { rms_norm(h + int64_t(r) * E, L.attn_norm, xn + int64_t(r) * E, E, eps); });
    }
    publish(li, "attn_norm", xn, E);
    LinearGroup qkv{L.wq.get(), L.wk.get(), L.wv.get()};
    {
      OpTimer t(prof, "quantize", li, {}, {m, {L.wq->prepare_desc()}});
      qkv.prepare(pool_, xn, E, m, prep);
    }
    {
      OpTimer t(prof, "qkv", li, L.wq->work(m) + L.wk->work(m) + L.wv->work(m),
                {m, {L.wq->op_desc(), L.wk->op_desc(), L.wv->op_desc()}});
      L.wq->matmul(pool_, qkv.input(0), m, q, Q);
      L.wk->matmul(pool_, qkv.input(1), m, k, KV);
      L.wv->matmul(pool_, qkv.input(2), m, v, KV);
    }
    publish(li, "q", q, Q), publish(li, "k", k, KV), publish(li, "v", v, KV);
    std::optional<OpTimer> rope_timer(std::in_place, prof, "qk_norm_rope_kv", li, OpWork{}, OpCall{m});
    auto qk_norm = [&](int64_t r) {
      float* qr = q + r * Q;
      float* kr = k + r * KV;
      for (int64_t hh = 0; hh < hp.n_head; ++hh) rms_norm(qr + hh * D, L.q_norm, qr + hh * D, D, eps);
      for (int64_t hh = 0; hh < hp.n_head_kv; ++hh) rms_norm(kr + hh * D, L.k_norm, kr + hh * D, D, eps);
    };
    auto qk_rope_kv = [&](int64_t r) {
      float* kr = k + r * KV;
      rope.apply(q + r * Q, hp.n_head, cosv + r * D / 2, sinv + r * D / 2);
      rope.apply(kr, hp.n_head_kv, cosv + r * D / 2, sinv + r * D / 2);
      kv_->write(int64_t(il), slot0 + r, kr, v + r * KV);
    };
    if (!tap_) {
      pool_.run(size_t(m), [&](size_t r, int) { qk_norm(int64_t(r)), qk_rope_kv(int64_t(r)); });
    } else {
      // Tapped, the fused row pass is split so that the normed Q/K can be seen (and replaced).
      pool_.run(size_t(m), [&](size_t r, int) { qk_norm(int64_t(r)); });
      publish(li, "q_normed", q, Q), publish(li, "k_normed", k, KV);
      pool_.run(size_t(m), [&](size_t r, int) {
        rope.apply(q + int64_t(r) * Q, hp.n_head, cosv + int64_t(r) * D / 2, sinv + int64_t(r) * D / 2);
        rope.apply(k + int64_t(r) * KV, hp.n_head_kv, cosv + int64_t(r) * D / 2, sinv + int64_t(r) * D / 2);
      });
      publish(li, "q_roped", q, Q), publish(li, "k_roped", k, KV);
      pool_.run(size_t(m), [&](size_t r, int) { kv_->write(int64_t(il), slot0 + int64_t(r), k + int64_t(r) * KV, v + int64_t(r) * KV); });
    }
    kv_->seal(int64_t(il), slot0 + m);
    rope_timer.reset();
    {
      // Attention reads the cache's keys and values up to each row's position: counted as MACs of
      // Q·K and P·V (2 · head_dim per head and key).
      double keys = 0;
      for (int64_t r = 0; r < m; ++r) keys += double(slot0 + r + 1);
      OpTimer t(prof, "attention", li, {keys * 2.0 * double(hp.n_head * D), 0}, {m});
      float* scratch = arena_.get<float>(s_.att_scratch);
      if (tiled_) tiled_->run(pool_, q, m, slot0, *kv_, int64_t(il), attn, scratch);
      else md.attention().run(pool_, as, q, m, slot0, kv_->k_rows(int64_t(il)), kv_->v_rows(int64_t(il)), attn, scratch,
                              att_scratch_per_worker_);
    }
    publish(li, "attn_out", attn, Q);
    LinearGroup wo{L.wo.get()};
    {
      OpTimer t(prof, "quantize", li, {}, {m, {L.wo->prepare_desc()}});
      wo.prepare(pool_, attn, Q, m, prep);
    }
    {
      OpTimer t(prof, "out_proj", li, L.wo->work(m), {m, {L.wo->op_desc()}});
      L.wo->matmul(pool_, wo.input(0), m, h_next, E, h);
    }
    std::swap(h, h_next);
    publish(li, "attn_residual", h, E);

    {
      OpTimer t(prof, "norm", li, {}, {m});
      pool_.run(size_t(m), [&](size_t r, int) { rms_norm(h + int64_t(r) * E, L.ffn_norm, xn + int64_t(r) * E, E, eps); });
    }
    publish(li, "ffn_norm", xn, E);
    LinearGroup gate_up{L.gate.get(), L.up.get()};
    {
      OpTimer t(prof, "quantize", li, {}, {m, {L.gate->prepare_desc()}});
      gate_up.prepare(pool_, xn, E, m, prep);
    }
    {
      OpTimer t(prof, "gate_up_swiglu", li, L.gate->work(m) + L.up->work(m), {m, {&L.gate_up_desc}});
      Linear::swiglu(pool_, *L.gate, *L.up, gate_up.input(0), gate_up.input(1), m, ffn, F, arena_.get<float>(s_.ffn_tmp));
    }
    publish(li, "ffn_act", ffn, F);
    LinearGroup down{L.down.get()};
    {
      OpTimer t(prof, "quantize", li, {}, {m, {L.down->prepare_desc()}});
      down.prepare(pool_, ffn, F, m, prep);
    }
    {
      OpTimer t(prof, "down", li, L.down->work(m), {m, {L.down->op_desc()}});
      L.down->matmul(pool_, down.input(0), m, h_next, E, h);
    }
    std::swap(h, h_next);
    publish(li, "l_out", h, E);

    // Deepstack (A.5): slice il of an image row is added after layer il.
    if (any_deepstack && int64_t(il) < hp.n_deepstack) {
      OpTimer t(prof, "deepstack", li, {}, {m});
      pool_.run(size_t(m), [&](size_t rr, int) {
        const float* ds = b.deepstack[size_t(begin + int64_t(rr))];
        if (!ds) return;
        float* hr = h + int64_t(rr) * E;
        const float* slice = ds + int64_t(il) * E;
        for (int64_t c = 0; c < E; ++c) hr[c] += slice[c];
      });
    }
    if (int64_t(il) < hp.n_deepstack) publish(li, "deepstack_out", h, E);
  }

  // Final norm and LM head for the rows whose logits are wanted, gathered in order.
  want_.clear();
  for (int64_t r = 0; r < m; ++r)
    if (b.logits[size_t(begin + r)]) want_.push_back(r);
  const int64_t rows = int64_t(want_.size());
  if (rows > 0) {
    OpTimer t(prof, "lm_head", -1, md.lm_head().work(rows), {rows, {md.lm_head().op_desc()}});
    pool_.run(size_t(rows), [&](size_t r, int) {
      rms_norm(h + want_[r] * E, md.output_norm(), xn + int64_t(r) * E, E, eps);
    });
    std::vector<int64_t> pos;
    if (tap_) {
      for (int64_t r : want_) pos.push_back(slot0 + r);
      tap_->publish("final_norm", xn, rows, E, E, 0, pos.data());
    }
    LinearGroup head{&md.lm_head()};
    head.prepare(pool_, xn, E, rows, prep);
    md.lm_head().matmul(pool_, head.input(0), rows, logits_out, hp.n_vocab);
    if (tap_) tap_->publish("logits", logits_out, rows, hp.n_vocab, hp.n_vocab, 0, pos.data());
  }
  n_past_ += m;
}

}  // namespace ckjit::graph
