#pragma once
// A session's activation arena, laid out in one place: the buffers a chunk of up to M rows uses
// (every intermediate of a decoder layer, the prepared matmul inputs, each worker's attention
// scratch, the rows' RoPE angles). The session reserves them; the memory check before anything is
// allocated sizes the same layout, so the two figures cannot drift apart.
#include <cstddef>
#include <cstdint>

#include "graph/arena.h"
#include "graph/kv_cache.h"
#include "graph/text_model.h"

namespace ckjit::graph {

struct ActivationSlots {
  size_t h0, h1, xn, prep, q, k, v, attn, ffn, ffn_tmp, att_scratch, cos, sin;
};

// What the layout depends on beyond the row count: the shapes, and two facts of the loaded model.
struct ActivationShape {
  Hparams hp;
  size_t prepare_scratch_bytes = 0;  // the matmuls' prepared inputs for M rows (TextModel::prepare_scratch_bytes)
  bool fused_ffn = false;
};
ActivationShape activation_shape(const TextModel& model, int64_t M);

// Reserves the slots in `arena` for chunks of up to M rows, with att_scratch_floats floats of
// attention scratch for each of `workers` workers.
ActivationSlots reserve_activations(Arena& arena, const ActivationShape& shape, int64_t M, int workers, int64_t att_scratch_floats);
inline ActivationSlots reserve_activations(Arena& arena, const TextModel& model, int64_t M, int workers, int64_t att_scratch_floats) {
  return reserve_activations(arena, activation_shape(model, M), M, workers, att_scratch_floats);
}

// What a session takes from the heap, before it allocates it: the f16 KV cache of n_ctx slots in
// `layout`, and the activations (the arena above plus one row of logits).
struct SessionBytes {
  double kv = 0, activations = 0;
};
SessionBytes session_bytes(const TextModel& model, int64_t n_ctx, KvLayout layout, int64_t M, int workers,
                           int64_t att_scratch_floats);
// The same from the shapes alone, before the model loads: no prepared inputs, no attention scratch
// (both small), the unfused FFN scratch; a floor the session's own check later completes.
SessionBytes session_bytes_before_load(const Hparams& hp, int64_t n_ctx, int64_t M);

}  // namespace ckjit::graph
