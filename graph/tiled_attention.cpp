#include "graph/tiled_attention.h"

#include <algorithm>

#include "jit/hand_kernels.h"
#include "runtime/error.h"
#include "runtime/quants/f16_rows.h"

namespace ckjit::graph {

namespace {
// Q rounded to f16 and back (exact), as llama.cpp's flash attention converts Q: the copies.
using RoundF16 = void (*)(const float*, float*, int64_t);
constexpr jit::HandCopy<RoundF16> kRoundF16[] = {
    {jit::HandIsa::avx2, quant::round_f16_rows_avx2},
    {jit::HandIsa::portable, quant::round_f16_rows},
};
static_assert(jit::lists_the_copies(kRoundF16, jit::HandOp::f16_rows));

const AttentionShape& checked(const AttentionShape& s) {
  if (s.head_dim % 8 != 0) throw Error("attention: head dim must be a multiple of 8");
  if (s.n_head_kv < 1 || s.n_head % s.n_head_kv != 0) throw Error("attention: query heads must be a multiple of KV heads");
  return s;
}

// Every key-block length a causal tile can meet: P, 2P, ... up to a full block, never past the cache.
std::vector<int64_t> causal_block_keys(int64_t n_pad, int P) {
  std::vector<int64_t> keys;
  for (int64_t nk = P; nk <= std::min(jit::AttentionTile::kKeyBlock, n_pad); nk += P) keys.push_back(nk);
  return keys;
}
}  // namespace

int64_t TiledAttention::scratch_floats(const AttentionShape& s) {
  const int64_t group = s.n_head / s.n_head_kv, rows_cap = std::max<int64_t>(1, 32 / group) * group;
  const int64_t dpad = (s.head_dim + 15) / 16 * 16;  // whole value panels of either width
  return jit::AttentionTile::scratch_floats(rows_cap, dpad) + rows_cap * s.head_dim;
}

TiledAttention::TiledAttention(const AttentionShape& s, int64_t n_pad, jit::IsaPath path, const topo::Isa& isa)
    : s_(checked(s)),
      group_(s.n_head / s.n_head_kv),
      positions_per_tile_(std::max<int64_t>(1, 32 / group_)),
      rows_cap_(positions_per_tile_ * group_),
      n_pad_(n_pad),
      tile_(path, s.head_dim, n_pad, causal_block_keys(n_pad, jit::panel_cols(path)), s.scale),
      round_f16_(jit::pick(kRoundF16, jit::HandOp::f16_rows, isa).fns) {
  if (s.head_dim % tile_.panel() != 0) throw Error("tiled attention: the head dim is not a whole number of value panels");
}

// Rows g * tp + i of the tile are head (kvh * group + g) of position i0 + i, for Q as for the output.
void TiledAttention::attend_tile(const KvCache& kv, int64_t layer, int64_t kvh, const float* q, int64_t i0,
                                 int64_t tp, int64_t pos0, float* out, float* scratch) const {
  const int64_t D = s_.head_dim, Qw = s_.n_head * D;
  const jit::TileRows rows{tp * group_, tp, Qw, D};
  const int64_t first = i0 * Qw + kvh * group_ * D;
  float* Qt = scratch + tile_.scratch_floats(rows_cap_);  // rows x D, after the tile's own scratch
  for (int64_t r = 0; r < rows.count; ++r) round_f16_(q + first + rows.offset(r), Qt + r * D, D);
  const jit::KeyMask causal{pos0 + i0 + 1, true};  // position i0 + i sees slots [0, pos0 + i0 + i]
  tile_.attend(Qt, D, rows, causal, kv.k_panels(layer, kvh), kv.v_panels(layer, kvh), out + first, scratch);
}

void TiledAttention::run(Workers& pool, const float* q, int64_t m, int64_t pos0, const KvCache& kv, int64_t layer, float* out,
                         float* scratch) const {
  if (kv.layout() != KvLayout::panels || kv.n_pad() != n_pad_ || kv.panel() != tile_.panel()) throw Error("tiled attention: the KV cache is not the panel cache it was built for");
  const int64_t tiles = (m + positions_per_tile_ - 1) / positions_per_tile_;
  pool.run(size_t(s_.n_head_kv * tiles), [&](size_t t, int worker) {
    // The last positions see the most keys: hand their tiles out first (the pool is dynamic).
    const int64_t kvh = int64_t(t) % s_.n_head_kv, pt = tiles - 1 - int64_t(t) / s_.n_head_kv;
    const int64_t i0 = pt * positions_per_tile_, tp = std::min(positions_per_tile_, m - i0);
    attend_tile(kv, layer, kvh, q, i0, tp, pos0, out, scratch + worker * scratch_floats());
  });
}

}  // namespace ckjit::graph
