#include "graph/decoder_forward.h"

#include <cmath>
#include <cstring>
#include <utility>

#include "graph/layer_ops.h"
#include "runtime/quants/quants.h"

namespace ckjit::graph {

namespace {

// One chunk's pass: the buffers looked up once, then one method per block of the layer.
class ChunkPass {
 public:
  ChunkPass(const TextModel& model, Workers& pool, const ForwardState& st, const Observers& obs, const Batch& b,
            int64_t begin, int64_t m, int64_t slot0, const RowSite* sites)
      : md_(model), hp_(model.hparams()), pool_(pool), st_(st), obs_(obs), b_(b), begin_(begin), m_(m), slot0_(slot0),
        sites_(sites), rows_(sites ? Rows::decode : Rows::batch),
        E_(hp_.n_embd), F_(hp_.n_ff), Q_(hp_.q_width()), KV_(hp_.kv_width()), D_(hp_.head_dim), eps_(hp_.rms_eps),
        h_(st.arena.get<float>(st.slots.h0)), h_next_(st.arena.get<float>(st.slots.h1)),
        xn_(st.arena.get<float>(st.slots.xn)), prep_(st.arena.get<void>(st.slots.prep)),
        q_(st.arena.get<float>(st.slots.q)), k_(st.arena.get<float>(st.slots.k)), v_(st.arena.get<float>(st.slots.v)),
        attn_(st.arena.get<float>(st.slots.attn)), ffn_(st.arena.get<float>(st.slots.ffn)),
        cos_(st.arena.get<float>(st.slots.cos)), sin_(st.arena.get<float>(st.slots.sin)) {}

  void run(float* logits_out) {
    embed();
    bool any_deepstack = false;
    for (int64_t r = 0; r < m_; ++r) any_deepstack = any_deepstack || b_.deepstack[size_t(begin_ + r)];
    for (size_t il = 0; il < md_.layers().size(); ++il) {
      attention_block(int(il));
      ffn_block(int(il));
      if (int64_t(il) < hp_.n_deepstack) add_deepstack(int(il), any_deepstack);
    }
    lm_head(logits_out);
  }

 private:
  // Token rows are looked up in token_embd, embedding rows copied; each row's RoPE angles from its position.
  void embed() {
    const gguf::TensorInfo& te = md_.token_embd();
    OpScope op(obs_, "embed", -1, {}, {m_}, {{"embd", h_, E_}});
    pool_.run(size_t(m_), [&](size_t rr, int) {
      const int64_t r = int64_t(rr), i = begin_ + r;
      if (b_.token[size_t(i)] >= 0)
        quant::dequantize_row(te.type.type, te.data + int64_t(b_.token[size_t(i)]) * int64_t(te.row_bytes()), h_ + r * E_, E_);
      else
        std::memcpy(h_ + r * E_, b_.embd[size_t(i)], size_t(E_) * sizeof(float));
      md_.rope().angles(b_.pos[size_t(i)], cos_ + r * D_ / 2, sin_ + r * D_ / 2);
    });
  }

  void norm(int li, const float* w, const char* checkpoint) {
    OpScope op(obs_, "norm", li, {}, {m_}, {{checkpoint, xn_, E_}});
    const int64_t groups = (m_ + 3) / 4;  // four rows per task: their sums interleave
    pool_.run(size_t(groups), [&](size_t g, int) {
      const int64_t r = int64_t(g) * 4;
      rms_norm_vectors(h_ + r * E_, E_, w, xn_ + r * E_, E_, std::min<int64_t>(4, m_ - r), E_, eps_);
    });
  }

  // The matmul inputs of `group` from x (k columns), quantized once per activation type.
  void prepare(int li, LinearGroup& group, const Linear& first, const float* x, int64_t k) {
    OpScope op(obs_, "quantize", li, {}, {m_, {first.prepare_desc()}});
    group.prepare(pool_, x, k, m_, prep_);
  }

  void attention_block(int li) {
    const TextModel::Layer& L = md_.layers()[size_t(li)];
    norm(li, L.attn_norm, "attn_norm");
    LinearGroup qkv{L.wq.get(), L.wk.get(), L.wv.get()};
    prepare(li, qkv, *L.wq, xn_, E_);
    {
      OpScope op(obs_, "qkv", li, L.wq->work(m_) + L.wk->work(m_) + L.wv->work(m_),
                 {m_, {L.wq->op_desc(), L.wk->op_desc(), L.wv->op_desc()}, decode_rows()}, {{"q", q_, Q_}, {"k", k_, KV_}, {"v", v_, KV_}});
      L.wq->matmul(pool_, qkv.input(0), m_, q_, Q_, nullptr, rows_);
      L.wk->matmul(pool_, qkv.input(1), m_, k_, KV_, nullptr, rows_);
      L.wv->matmul(pool_, qkv.input(2), m_, v_, KV_, nullptr, rows_);
    }
    qk_norm_rope_kv(li, L);
    attention(li);
    LinearGroup wo{L.wo.get()};
    prepare(li, wo, *L.wo, attn_, Q_);
    {
      OpScope op(obs_, "out_proj", li, L.wo->work(m_), {m_, {L.wo->op_desc()}, decode_rows()}, {{"attn_residual", h_next_, E_}});
      L.wo->matmul(pool_, wo.input(0), m_, h_next_, E_, h_, rows_);
    }
    std::swap(h_, h_next_);
  }

  // Per row: per-head RMSNorm of Q and K, M-RoPE of both, K and V into the f16 cache.
  void qk_norm_rope_kv(int li, const TextModel::Layer& L) {
    OpScope op(obs_, "qk_norm_rope_kv", li, {}, {m_});
    const Rope& rope = md_.rope();
    auto qk_norm = [&](int64_t r) {
      float* qr = q_ + r * Q_;
      float* kr = k_ + r * KV_;
      rms_norm_vectors(qr, D_, L.q_norm, qr, D_, hp_.n_head, D_, eps_);
      rms_norm_vectors(kr, D_, L.k_norm, kr, D_, hp_.n_head_kv, D_, eps_);
    };
    auto qk_rope = [&](int64_t r) {
      rope.apply(q_ + r * Q_, hp_.n_head, cos_ + r * D_ / 2, sin_ + r * D_ / 2);
      rope.apply(k_ + r * KV_, hp_.n_head_kv, cos_ + r * D_ / 2, sin_ + r * D_ / 2);
    };
    auto kv_store = [&](int64_t r) { kv_of(r).write(li, slot_of(r), k_ + r * KV_, v_ + r * KV_); };
    if (!obs_.tap) {
      pool_.run(size_t(m_), [&](size_t r, int) { qk_norm(int64_t(r)), qk_rope(int64_t(r)), kv_store(int64_t(r)); });
    } else {
      // Tapped variant: the row pass runs as three passes so that the normed and the rotated Q/K
      // can be seen (and replaced) between them; each row gets the same ops in the same order.
      pool_.run(size_t(m_), [&](size_t r, int) { qk_norm(int64_t(r)); });
      op.publish({"q_normed", q_, Q_}), op.publish({"k_normed", k_, KV_});
      pool_.run(size_t(m_), [&](size_t r, int) { qk_rope(int64_t(r)); });
      op.publish({"q_roped", q_, Q_}), op.publish({"k_roped", k_, KV_});
      pool_.run(size_t(m_), [&](size_t r, int) { kv_store(int64_t(r)); });
    }
    if (!sites_) st_.kv.seal(li, slot0_ + m_);
    else
      for (int64_t r = 0; r < m_; ++r) sites_[r].kv->seal(li, sites_[r].slot + 1);
  }

  KvCache& kv_of(int64_t r) const { return sites_ ? *sites_[r].kv : st_.kv; }
  int64_t slot_of(int64_t r) const { return sites_ ? sites_[r].slot : slot0_ + r; }

  void attention(int li) {
    // Attention reads the cache's keys and values up to each row's position: counted as MACs of
    // Q·K and P·V (2 · head_dim per head and key).
    double keys = 0;
    for (int64_t r = 0; r < m_; ++r) keys += double(slot_of(r) + 1);
    OpScope op(obs_, "attention", li, {keys * 2.0 * double(hp_.n_head * D_), 0}, {m_}, {{"attn_out", attn_, Q_}});
    float* scratch = st_.arena.get<float>(st_.slots.att_scratch);
    const AttentionShape as{hp_.n_head, hp_.n_head_kv, D_, 1.0f / std::sqrt(float(D_))};
    // One run over the chunk's rows of one sequence, or one per row of a multi-sequence step (each
    // row then attends to its own cache exactly as its sequence's M = 1 step would).
    auto attend = [&](const TiledAttention* tiled, KvCache& kv, int64_t r0, int64_t rows, int64_t slot) {
      if (tiled)
        tiled->run(pool_, q_ + r0 * Q_, rows, slot, kv, li, attn_ + r0 * Q_, scratch);
      else
        md_.attention().run(pool_, as, q_ + r0 * Q_, rows, slot, kv.k_rows(li), kv.v_rows(li), attn_ + r0 * Q_, scratch,
                            st_.att_scratch_per_worker);
    };
    if (!sites_) attend(st_.tiled, st_.kv, 0, m_, slot0_);
    else
      for (int64_t r = 0; r < m_; ++r) attend(sites_[r].tiled, *sites_[r].kv, r, 1, sites_[r].slot);
  }

  void ffn_block(int li) {
    const TextModel::Layer& L = md_.layers()[size_t(li)];
    norm(li, L.ffn_norm, "ffn_norm");
    LinearGroup gate_up{L.gate.get(), L.up.get()};
    prepare(li, gate_up, *L.gate, xn_, E_);
    {
      OpScope op(obs_, "gate_up_swiglu", li, L.gate->work(m_) + L.up->work(m_), {m_, {&L.gate_up_desc}, decode_rows()},
                 {{"ffn_act", ffn_, F_}});
      Linear::swiglu(pool_, *L.gate, *L.up, gate_up.input(0), gate_up.input(1), m_, ffn_, F_,
                     st_.arena.get<float>(st_.slots.ffn_tmp), rows_);
    }
    LinearGroup down{L.down.get()};
    prepare(li, down, *L.down, ffn_, F_);
    {
      OpScope op(obs_, "down", li, L.down->work(m_), {m_, {L.down->op_desc()}, decode_rows()}, {{"l_out", h_next_, E_}});
      L.down->matmul(pool_, down.input(0), m_, h_next_, E_, h_, rows_);
    }
    std::swap(h_, h_next_);
  }

  // Deepstack (A.5): slice li of an image row is added after layer li. Untimed when no row of the
  // chunk carries slices; the checkpoint is published either way.
  void add_deepstack(int li, bool any_deepstack) {
    OpScope op(obs_, any_deepstack ? "deepstack" : nullptr, li, {}, {m_}, {{"deepstack_out", h_, E_}});
    if (!any_deepstack) return;
    pool_.run(size_t(m_), [&](size_t rr, int) {
      const float* ds = b_.deepstack[size_t(begin_ + int64_t(rr))];
      if (!ds) return;
      float* hr = h_ + int64_t(rr) * E_;
      const float* slice = ds + int64_t(li) * E_;
      for (int64_t c = 0; c < E_; ++c) hr[c] += slice[c];
    });
  }

  // Final norm and LM head for the rows whose logits are wanted, gathered in order.
  void lm_head(float* logits_out) {
    std::vector<int64_t>& want = st_.want;
    want.clear();
    for (int64_t r = 0; r < m_; ++r)
      if (b_.logits[size_t(begin_ + r)]) want.push_back(r);
    const int64_t rows = int64_t(want.size());
    if (rows == 0) return;
    std::vector<int64_t> pos;  // the wanted rows' sequence positions, for the tap only
    if (obs_.tap)
      for (int64_t r : want) pos.push_back(slot_of(r));
    const Linear& head = md_.lm_head();
    OpScope op(obs_, "lm_head", -1, head.work(rows), {rows, {head.op_desc()}}, {{"logits", logits_out, hp_.n_vocab}},
               pos.data());
    pool_.run(size_t(rows), [&](size_t r, int) { rms_norm(h_ + want[r] * E_, md_.output_norm(), xn_ + int64_t(r) * E_, E_, eps_); });
    op.publish({"final_norm", xn_, E_});
    LinearGroup group{&head};
    group.prepare(pool_, xn_, E_, rows, prep_);
    head.matmul(pool_, group.input(0), rows, logits_out, hp_.n_vocab);
  }

  const TextModel& md_;
  const Hparams& hp_;
  Workers& pool_;
  const ForwardState& st_;
  const Observers& obs_;
  const Batch& b_;
  const int64_t begin_, m_, slot0_;
  const RowSite* sites_;  // null: one sequence at slots slot0_.. (see forward_chunk)
  const Rows rows_;
  bool decode_rows() const { return rows_ == Rows::decode; }  // for the report: what these rows run
  const int64_t E_, F_, Q_, KV_, D_;
  const float eps_;
  float* h_;  // the rows' hidden state; h_ and h_next_ swap after each residual op
  float* h_next_;
  float* xn_;
  void* prep_;
  float *q_, *k_, *v_, *attn_, *ffn_, *cos_, *sin_;
};

}  // namespace

void forward_chunk(const TextModel& model, Workers& pool, const ForwardState& state, const Observers& obs,
                   const Batch& b, int64_t begin, int64_t m, int64_t slot0, float* logits_out, const RowSite* sites) {
  if (obs.profile) obs.profile->add_rows(obs.profile->phase(), m);
  ChunkPass(model, pool, state, obs, b, begin, m, slot0, sites).run(logits_out);
}

}  // namespace ckjit::graph
