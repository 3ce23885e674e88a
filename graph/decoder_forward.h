#pragma once
// The Qwen3-VL decoder's forward pass over one chunk of rows: embedding rows, then per layer
// attn_norm, Q/K/V matmuls, Q/K norm + M-RoPE + KV store, attention, output projection + residual,
// ffn_norm, Gate-Up SwiGLU, down + residual, deepstack slices; then the final norm and the LM head
// for the rows that want logits. Every op runs under one OpScope (graph/op_scope.h): timed into the
// profile and its checkpoints published to the tap when either is attached.
// The session owns what the pass runs on (KV cache, arena, positions) and lends it per chunk.
#include <cstdint>
#include <vector>

#include "graph/activations.h"
#include "graph/arena.h"
#include "graph/batch.h"
#include "graph/kv_cache.h"
#include "graph/linear.h"
#include "graph/op_scope.h"
#include "graph/text_model.h"
#include "graph/tiled_attention.h"
#include "topology/workers.h"

namespace ckjit::graph {

// A session's state, lent to the pass for one chunk.
struct ForwardState {
  KvCache& kv;
  const TiledAttention* tiled;  // null: llama.cpp's row attention (TextModel::attention())
  const Arena& arena;
  const ActivationSlots& slots;
  int64_t att_scratch_per_worker;
  std::vector<int64_t>& want;  // scratch: the chunk rows whose logits are wanted (reserved for M rows)
};

// Where one row of a multi-sequence decode step goes: its sequence's cache, that sequence's
// attention (null: llama.cpp's row attention) and the row's slot in it.
struct RowSite {
  KvCache* kv;
  const TiledAttention* tiled;
  int64_t slot;
};

// Runs rows [begin, begin + m) of `b` (m <= the arena's M) through the decoder at KV slots
// [slot0, slot0 + m) and writes the logits of the rows that ask for them, in batch order, to
// logits_out. Does not advance the session: the caller counts the m slots as used.
// sites (m entries, or null): the rows are decode rows of different sequences, row r at sites[r]
// (state.kv and state.tiled and slot0 unused): each row is computed as that sequence's M = 1
// decode step would be (Rows::decode), attending to its own cache only.
void forward_chunk(const TextModel& model, Workers& pool, const ForwardState& state, const Observers& obs,
                   const Batch& b, int64_t begin, int64_t m, int64_t slot0, float* logits_out,
                   const RowSite* sites = nullptr);

}  // namespace ckjit::graph
