#include "graph/activations.h"

#include <algorithm>

namespace ckjit::graph {

ActivationShape activation_shape(const TextModel& model, int64_t M) {
  return {model.hparams(), size_t(model.prepare_scratch_bytes(M)), model.fused_ffn()};
}

ActivationSlots reserve_activations(Arena& arena, const ActivationShape& shape, int64_t M, int workers, int64_t att_scratch_floats) {
  const Hparams& hp = shape.hp;
  const int64_t E = hp.n_embd, F = hp.n_ff, Q = hp.q_width(), KV = hp.kv_width();
  const size_t f4 = sizeof(float);
  ActivationSlots s{};
  s.h0 = arena.reserve("h0", size_t(M * E) * f4);
  s.h1 = arena.reserve("h1", size_t(M * E) * f4);
  s.xn = arena.reserve("xn", size_t(M * E) * f4);
  s.prep = arena.reserve("prepared_inputs", shape.prepare_scratch_bytes);
  s.q = arena.reserve("q", size_t(M * Q) * f4);
  s.k = arena.reserve("k", size_t(M * KV) * f4);
  s.v = arena.reserve("v", size_t(M * KV) * f4);
  s.attn = arena.reserve("attn", size_t(M * Q) * f4);
  s.ffn = arena.reserve("ffn", size_t(M * F) * f4);
  // Unfused gate/up scratch: M rows of up, and gate|up of the one decode row.
  s.ffn_tmp = arena.reserve("ffn_gate_up", size_t((shape.fused_ffn ? 2 : std::max<int64_t>(2, M)) * F) * f4);
  s.att_scratch = arena.reserve("attention", size_t(int64_t(workers) * att_scratch_floats) * f4);
  s.cos = arena.reserve("rope_cos", size_t(M * hp.head_dim / 2) * f4);
  s.sin = arena.reserve("rope_sin", size_t(M * hp.head_dim / 2) * f4);
  return s;
}

SessionBytes session_bytes(const TextModel& model, int64_t n_ctx, KvLayout layout, int64_t M, int workers,
                           int64_t att_scratch_floats) {
  const Hparams& hp = model.hparams();
  Arena plan;  // reserved, never committed: only its size is read
  reserve_activations(plan, model, M, workers, att_scratch_floats);
  SessionBytes b;
  b.kv = KvCache::bytes_for(hp.n_layer, n_ctx, hp.n_head_kv, hp.head_dim, layout);
  b.activations = double(plan.bytes()) + double(sizeof(float)) * double(hp.n_vocab);
  return b;
}

SessionBytes session_bytes_before_load(const Hparams& hp, int64_t n_ctx, int64_t M) {
  Arena plan;
  reserve_activations(plan, ActivationShape{hp, 0, false}, std::min(M, n_ctx), 1, 0);
  SessionBytes b;
  b.kv = KvCache::bytes_for(hp.n_layer, n_ctx, hp.n_head_kv, hp.head_dim, KvLayout::rows);
  b.activations = double(plan.bytes()) + double(sizeof(float)) * double(hp.n_vocab);
  return b;
}

}  // namespace ckjit::graph
