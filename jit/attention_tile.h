#pragma once
// One tile of the tiled online-softmax attention, shared by the decoder's causal GQA attention
// (graph/tiled_attention.h) and the vision tower's full attention (vision/vision_ops.h), so both
// keep one float order: up to 32 query rows against key and value panels of P =
// panel_cols(path) columns (8 on avx2, 16 on avx512: the same bits, padded keys and dims are
// exact zeros), in key blocks of kKeyBlock. Per block: S = Q K^T (op=dense JIT tiles, one FMA chain over head_dim per score),
// softmax_step per row (jit/tile_softmax.h) over the keys the row may see, O *= alpha, and
// O += P V (one chain over the keys per output, continued across blocks); then out = O * (1 / L).
// The callers differ only in where rows go (TileRows), which keys they see (KeyMask) and how the
// panels hold their f16-rounded values: as f16 (the decoder's KV cache) or widened to f32 (the
// vision tower, which packs its panels per layer: no conversion in the products; f16 -> f32 is
// exact, so the same bits).
// In jit/, below graph/ and vision/, so both may use it.
#include <cstdint>
#include <vector>

#include "jit/kernel_args.h"
#include "jit/kernel_spec.h"

namespace ckjit::jit {

// Where the rows of a tile live in the caller's output: `positions` consecutive positions of one
// head, then the same positions of the next head (the decoder's tile holds every query head of
// one KV head; a vision tile holds one head).
struct TileRows {
  int64_t count;            // rows in the tile
  int64_t positions;        // row r is position r % positions of head r / positions
  int64_t position_stride;  // floats between consecutive positions in out
  int64_t head_stride;      // floats between consecutive heads in out
  int64_t offset(int64_t r) const { return (r % positions) * position_stride + (r / positions) * head_stride; }
};

// Which keys each row sees: the first `keys` (full attention) or, causal, keys + p for position p
// (a decoder row sees the cache up to its own slot). Keys past that get weight exactly 0.
struct KeyMask {
  int64_t keys;  // keys position 0 sees
  bool causal;
  int64_t seen(const TileRows& rows, int64_t r) const { return causal ? keys + r % rows.positions : keys; }
  int64_t most(const TileRows& rows) const { return causal ? keys + rows.positions - 1 : keys; }
};

class AttentionTile {
 public:
  static constexpr int64_t kKeyBlock = 128;
  static constexpr int64_t kMaxTileRows = 32;
  // Emits the kernels of `path` (avx2 or avx512) for heads of head_dim (a multiple of 8) and
  // value panels of panel_keys keys; block_keys: the lengths (multiples of P, at most kKeyBlock)
  // the caller's key blocks can have; panel_type: F16 or F32 panel elements.
  AttentionTile(IsaPath path, int64_t head_dim, int64_t panel_keys, const std::vector<int64_t>& block_keys, float scale,
                TensorType panel_type = TensorType::F16);
  int panel() const { return P_; }
  // Query rows per register block (a tile of a multiple of it leaves no short block).
  int block_rows() const { return mr_; }
  // head_dim rounded up to whole value panels: the value panels hold padded_dim() / P dims of zeros past head_dim.
  int64_t padded_dim() const { return dpad_; }
  // Floats of scratch one tile of up to max_rows rows needs (padded_dim: padded_dim()).
  static int64_t scratch_floats(int64_t max_rows, int64_t padded_dim) { return max_rows * (kKeyBlock + padded_dim + 2); }
  int64_t scratch_floats(int64_t max_rows) const { return scratch_floats(max_rows, dpad_); }
  // q: rows.count query rows of head_dim floats, ldq apart (rounded as the caller's contract wants);
  // kp: key panels of head_dim x P elements (key j in panel j / P, keys padded to whole panels); vp:
  // padded_dim() / P value panels of panel_keys x P elements; out: row r at out + rows.offset(r).
  void attend(const float* q, int64_t ldq, const TileRows& rows, const KeyMask& mask, const void* kp,
              const void* vp, float* out, float* scratch) const;

 private:
  static constexpr int kMaxMr = 6, kMaxNr = 4;  // micro-tile: rows x panels of P keys (or P dims)
  struct Accumulators;
  void scores(const float* q, int64_t ldq, int64_t rows, const uint8_t* kp, int64_t kb, int64_t nk, float* S) const;
  void softmax_rows(const TileRows& rows, const KeyMask& mask, int64_t kb, int64_t nk, const Accumulators& acc) const;
  void add_pv(int64_t rows, const uint8_t* vp, int64_t kb, int64_t nk, const Accumulators& acc) const;
  void normalise(const TileRows& rows, const Accumulators& acc, float* out) const;
  GemmFn pv_kernel(int64_t nk, int mr, int nr) const;
  size_t pv_index(int64_t nk, int mr, int nr) const { return size_t(((nk / P_ - 1) * kMaxMr + mr - 1) * kMaxNr + nr - 1); }
  int P_, mr_, nr_;  // the tile's register block (attention_tile.cpp: tile_block)
  int64_t head_dim_, dpad_, panel_keys_, esize_;  // esize_: bytes per panel element
  float scale_;
  // jit/tile_softmax.h over a tile's rows: four rows at once in 16 lanes on avx512; the same bits.
  void (*softmax_)(float* S, int64_t rows, int64_t nk, const int64_t* valid, float scale, float* m, float* l, float* alpha);
  std::vector<GemmFn> score_fns_;  // [mr-1][nr-1]
  std::vector<GemmFn> pv_fns_;     // [nk/P-1][mr-1][nr-1]; null for block lengths not asked for
};

}  // namespace ckjit::jit
