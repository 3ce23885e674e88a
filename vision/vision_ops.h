#pragma once
// The element-wise and attention ops of the vision tower (spec/qwen3vl.md B.3-B.5), one
// implementation each with one float order on every CPU (AVX2 + FMA + F16C is the floor; none of
// these ops dominates the encode time the way the matmuls and the attention products do).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "runtime/aligned_allocator.h"
#include "topology/isa.h"
#include "topology/workers.h"
#include "jit/attention_tile.h"

namespace ckjit::vision {

// Runs fn(begin, end) over [0, count) in about 4 contiguous parts per worker.
template <class F>
void for_rows(Workers& pool, int64_t count, const F& fn) {
  if (count <= 0) return;
  const int64_t parts = std::min<int64_t>(count, int64_t(pool.size()) * 4);
  pool.run(size_t(parts), [&](size_t t, int) {
    const Range r = split_range(count, parts, int64_t(t));
    if (r.begin < r.end) fn(r.begin, r.end);
  });
}

// y = x rounded to f16 (nearest even) and widened back; y may alias x. The copy of it (AVX2 + F16C
// or portable: runtime/quants/f16_rows.h) that jit::hand_isa chooses for a load's Isa; the ops
// that round take it once, at construction.
using RoundF16 = void (*)(const float* x, float* y, int64_t n);
RoundF16 round_f16_for(const topo::Isa& isa);

// ggml's norm + mul + add: mean and variance summed in double, y = ((x - mean) * (1/sqrtf(var + eps))) * w + b.
// rows of n floats, x rows ldx apart, y rows ldy apart; y may alias x.
void layer_norm_rows(Workers& pool, const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows, int64_t n,
                     const float* w, const float* b, float eps);

// tanh-GELU as llama.cpp's CPU backend computes it: x rounded to f16 and looked up in a table of
// f16(gelu(x)); x <= -10 gives 0, x >= 10 gives x. In place over rows of n floats (ld apart),
// through the copy of the row kernel chosen for isa (vision_ops_kernels.h).
class GeluTable {
 public:
  explicit GeluTable(const topo::Isa& isa);
  void apply(Workers& pool, float* x, int64_t ld, int64_t rows, int64_t n) const;
  float operator()(float x) const;

 private:
  std::vector<float> table_;  // 65536 entries, indexed by the f16 bits of x
  void (*rows_)(const float* table, float* x, int64_t n);
};

// The 2D rotary embedding of the vision heads (B.4) for a grid of gh x gw patches in merge order:
// pair (j, j + dh/2) of each head turns by row * w_j (j < dh/4) or col * w_{j - dh/4}, with
// w_m = 10000^(-4m/dh). cos/sin tables: n rows of dh/2 (double-precision angles, rounded once).
struct Rope2d {
  int64_t head_dim = 0, n = 0;
  std::vector<float> cos, sin;
  Rope2d(int64_t gh, int64_t gw, int64_t head_dim);
  // Rotates n rows of n_head heads (row stride ld floats) in place.
  void apply(Workers& pool, float* x, int64_t ld, int64_t n_head) const;
};

// Position of patch (py, px) of a gh x gw grid in merge order: 2 x 2 blocks in raster order, and
// (0,0), (0,1), (1,0), (1,1) inside a block.
inline int64_t merge_index(int64_t py, int64_t px, int64_t gw) {
  return ((py / 2) * (gw / 2) + px / 2) * 4 + (py % 2) * 2 + (px % 2);
}

// The tower's attention over one image, as the encoder calls it: qkv rows (n patches of
// [q | k | v], each n_head x head_dim, rotated) in, out rows (n x n_head*head_dim) out.
class AttentionOp {
 public:
  virtual ~AttentionOp() = default;
  virtual void run(Workers& pool, const float* qkv, int64_t ld, float* out, int64_t ldo) const = 0;
};

// Full (non-causal) attention of n patches, each head separately, q/k/v read from the qkv rows
// (row stride ld floats: Q at 0, K at C, V at 2C; head h at h * dh), out: n rows of C (ldo apart).
// q, k and v are rounded to f16 first (llama.cpp's flash attention casts K and V to F16 and
// multiplies F16 queries). Tiles of up to 32 queries x 128 keys with an online softmax, so no n x n
// score matrix exists; both products are op=dense JIT tiles (keys and values repacked per head
// into panels of their f16-rounded values, widened to f32 so the products convert nothing): S = Q K^T (one FMA chain over d per score, then * 1/sqrt(dh)) and
// O = alpha O + P V (one chain over the keys per output, continued across key blocks after the
// rescale). The tiling is fixed, not per thread: same result for any thread count. The panels are
// those of isa's widest op=dense path (16 on AVX-512, 8 on AVX2): the same bits.
class VisionAttention final : public AttentionOp {
 public:
  VisionAttention(int64_t n, int64_t n_head, int64_t head_dim, int threads, const topo::Isa& isa);
  ~VisionAttention() override;
  void run(Workers& pool, const float* qkv, int64_t ld, float* out, int64_t ldo) const override;

 private:
  void pack_head(const float* qkv, int64_t ld, int64_t h) const;
  int64_t n_, n_head_, dh_, P_, n_pad_;
  jit::AttentionTile tile_;
  int64_t tq_;                     // query rows per tile
  int64_t dpad_;                   // dh rounded up to whole value panels
  mutable AlignedVector<float> kp_;  // per head: n_pad/P panels of dh x P keys (f16-rounded)
  mutable AlignedVector<float> vp_;  // per head: dpad/P panels of n_pad x P values (f16-rounded)
  mutable AlignedVector<float> scratch_;
  int64_t scratch_per_worker_ = 0;
  RoundF16 round_f16_;  // q, k, v to f16 values: the copy chosen for the load's Isa
};

}  // namespace ckjit::vision
