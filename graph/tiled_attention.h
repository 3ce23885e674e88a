#pragma once
// Causal GQA attention of the decoder over the panel KV cache (KvLayout::panels), for any number
// of query rows (a prefill chunk or one decode row), in tiles: a tile is one KV head and up to
// 32 / group query positions of every query head of its group (the rows share the key and value
// panels), over key blocks of 128 with an online softmax, so no score matrix is ever larger than
// 32 x 128. Both products are op=dense JIT tiles (on the widest op=dense path: ymm with 8-key
// panels, zmm with 16; the same bits, as the cache's panels are the path's width):
// S = Q K^T (one FMA chain over head_dim per score, then * scale inside the softmax) and
// O = alpha O + P V (one chain over the keys per output, continued across key blocks).
// Float order: Q rounded to f16 (as llama.cpp's flash attention), K and V f16 from the cache,
// scores, softmax and the weighted sum in f32; keys past a row's position get weight exactly 0.
// A row's result depends only on its query and the keys it sees: the same bits for any chunking,
// thread count or ISA path, and a prompt evaluated as one batch equals it evaluated row by row.
// (--llama-order keeps llama.cpp's row attention with its f16 accumulator: graph/layer_ops.h.)
#include <cstdint>
#include <vector>

#include "graph/kv_cache.h"
#include "graph/layer_ops.h"
#include "topology/workers.h"
#include "jit/attention_tile.h"

namespace ckjit::graph {

class TiledAttention {
 public:
  // Emits the kernels of `path` (avx2 or avx512) for this shape and a cache of n_pad slots
  // (KvCache::n_pad()) in panels of panel() keys; isa (the load's) picks the copy of the queries'
  // f16 rounding (jit::hand_isa, HandOp::f16_rows).
  TiledAttention(const AttentionShape& s, int64_t n_pad, jit::IsaPath path, const topo::Isa& isa);
  int panel() const { return tile_.panel(); }
  // Floats of scratch one worker needs; the static form before the kernels are emitted (a session
  // checks its memory first).
  static int64_t scratch_floats(const AttentionShape& s);
  int64_t scratch_floats() const { return scratch_floats(s_); }
  // out[i] = attention of query row i (position slot pos0 + i; it sees cache slots [0, pos0 + i]) for
  // m rows of n_head*head_dim floats. scratch: scratch_floats() per worker.
  void run(Workers& pool, const float* q, int64_t m, int64_t pos0, const KvCache& kv, int64_t layer, float* out,
           float* scratch) const;

 private:
  void attend_tile(const KvCache& kv, int64_t layer, int64_t kvh, const float* q, int64_t i0, int64_t rows_per_head,
                   int64_t pos0, float* out, float* scratch) const;
  AttentionShape s_;
  int64_t group_, positions_per_tile_, rows_cap_, n_pad_;
  jit::AttentionTile tile_;
  void (*round_f16_)(const float* x, float* y, int64_t n);  // the copy chosen for the load's Isa
};

}  // namespace ckjit::graph
