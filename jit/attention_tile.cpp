#include "jit/attention_tile.h"

#include <algorithm>
#include <limits>

#include "jit/kernels.h"
#include "jit/tile_softmax.h"
#include "runtime/error.h"

namespace ckjit::jit {

namespace {
// The tile's register block: avx512 6 x 4, so that the value products of a 64-dim head are one
// block of 4 panels (op=dense's 8 x 3 would split them 3 + 1); avx2 op=dense's 4 x 3.
DenseBlock tile_block(IsaPath path) { return path == IsaPath::Avx512 ? DenseBlock{6, 4} : dense_block(path); }

// The softmax step of `rows` rows of S (kKeyBlock apart): one row at a time (8 lanes), or four at
// a time with 16-lane exps (avx512 blocks are whole 16-key panels). The same bits either way.
void softmax_rows8(float* S, int64_t rows, int64_t nk, const int64_t* valid, float scale, float* m, float* l, float* alpha) {
  for (int64_t r = 0; r < rows; ++r)
    alpha[r] = softmax_step(S + r * AttentionTile::kKeyBlock, nk, valid[r], scale, m[r], l[r]);
}
void softmax_rows16x4(float* S, int64_t rows, int64_t nk, const int64_t* valid, float scale, float* m, float* l, float* alpha) {
  if (nk % 16 != 0) return softmax_rows8(S, rows, nk, valid, scale, m, l, alpha);
  constexpr int64_t ld = AttentionTile::kKeyBlock;
  int64_t r = 0;
  for (; r + 4 <= rows; r += 4) softmax_rows16<4>(S + r * ld, ld, nk, valid + r, scale, m + r, l + r, alpha + r);
  for (; r < rows; ++r) softmax_rows16<1>(S + r * ld, ld, nk, valid + r, scale, m + r, l + r, alpha + r);
}
}  // namespace

// The tile's scratch: scores, output rows and each row's running max and sum.
struct AttentionTile::Accumulators {
  float* S;  // rows x kKeyBlock
  float* O;  // rows x head_dim
  float* M;
  float* L;
};

AttentionTile::AttentionTile(IsaPath path, int64_t head_dim, int64_t panel_keys, const std::vector<int64_t>& block_keys,
                             float scale, TensorType panel_type)
    : P_(panel_cols(path)), mr_(tile_block(path).mr), nr_(tile_block(path).nr),
      head_dim_(head_dim), dpad_((head_dim + P_ - 1) / P_ * P_), panel_keys_(panel_keys),
      esize_(panel_type == TensorType::F32 ? 4 : 2), scale_(scale),
      softmax_(path == IsaPath::Avx512 ? softmax_rows16x4 : softmax_rows8),
      score_fns_(size_t(kMaxMr * kMaxNr), nullptr), pv_fns_(size_t(kKeyBlock / 8 * kMaxMr * kMaxNr), nullptr) {
  if (head_dim % 8 != 0) throw Error("attention tile: head dim must be a multiple of 8");
  if (panel_type != TensorType::F16 && panel_type != TensorType::F32) throw Error("attention tile: panels must be f16 or f32");
  for (int mr = 1; mr <= mr_; ++mr)
    for (int nr = 1; nr <= nr_; ++nr)
      score_fns_[size_t((mr - 1) * kMaxNr + nr - 1)] =
          dense_kernel(path, panel_type, mr, nr, head_dim, head_dim, false, Epilogue::Store);
  for (int64_t nk : block_keys) {
    if (nk % P_ != 0 || nk < P_ || nk > kKeyBlock) throw Error("attention tile: bad key block length");
    for (int mr = 1; mr <= mr_; ++mr)
      for (int nr = 1; nr <= nr_; ++nr)
        pv_fns_[pv_index(nk, mr, nr)] = dense_kernel(path, panel_type, mr, nr, nk, panel_keys, true, Epilogue::Store);
  }
}

GemmFn AttentionTile::pv_kernel(int64_t nk, int mr, int nr) const {
  const GemmFn fn = pv_fns_[pv_index(nk, mr, nr)];
  if (!fn) throw Error("attention tile: no kernel for a key block of this length");
  return fn;
}

// S = Q K^T for keys [kb, kb + nk): key panels are the "weights" (head_dim x P each).
void AttentionTile::scores(const float* q, int64_t ldq, int64_t rows, const uint8_t* kp, int64_t kb, int64_t nk,
                           float* S) const {
  const int64_t D = head_dim_, kpanels = nk / P_;
  GemmArgs a;
  for (int64_t r = 0; r < rows; r += mr_) {
    const int mr = int(std::min<int64_t>(mr_, rows - r));
    for (int64_t p = 0; p < kpanels; p += nr_) {
      const int nr = int(std::min<int64_t>(nr_, kpanels - p));
      a.w = kp + (kb / P_ + p) * D * P_ * esize_;
      a.x = q + r * ldq, a.ldx = ldq * 4;
      a.y = S + r * kKeyBlock + p * P_, a.ldy = kKeyBlock * 4;
      score_fns_[size_t((mr - 1) * kMaxNr + nr - 1)](&a);
    }
  }
}


// Softmax step of every row over the keys it sees; earlier output rescaled by alpha.
void AttentionTile::softmax_rows(const TileRows& rows, const KeyMask& mask, int64_t kb, int64_t nk,
                                 const Accumulators& acc) const {
  const int64_t D = dpad_;
  int64_t valid[kMaxTileRows];
  float alpha[kMaxTileRows];
  for (int64_t r = 0; r < rows.count; ++r) valid[r] = std::clamp<int64_t>(mask.seen(rows, r) - kb, 0, nk);
  softmax_(acc.S, rows.count, nk, valid, scale_, acc.M, acc.L, alpha);
  for (int64_t r = 0; r < rows.count; ++r)
    if (kb > 0 && alpha[r] != 1.0f)  // x * 1 == x: skipping it changes no bit
      for (int64_t d = 0; d < D; ++d) acc.O[r * D + d] *= alpha[r];
}

// O += P V: value panels (P dims x all keys) are the "weights"; the chain continues in O, whose
// rows are padded_dim() wide.
void AttentionTile::add_pv(int64_t rows, const uint8_t* vp, int64_t kb, int64_t nk, const Accumulators& acc) const {
  const int64_t D = dpad_, dpanels = D / P_;
  GemmArgs a;
  for (int64_t r = 0; r < rows; r += mr_) {
    const int mr = int(std::min<int64_t>(mr_, rows - r));
    for (int64_t p = 0; p < dpanels; p += nr_) {
      const int nr = int(std::min<int64_t>(nr_, dpanels - p));
      a.w = vp + (p * panel_keys_ * P_ + kb * P_) * esize_;
      a.x = acc.S + r * kKeyBlock, a.ldx = kKeyBlock * 4;
      a.y = acc.O + r * D + p * P_, a.ldy = D * 4;
      pv_kernel(nk, mr, nr)(&a);
    }
  }
}

void AttentionTile::normalise(const TileRows& rows, const Accumulators& acc, float* out) const {
  for (int64_t r = 0; r < rows.count; ++r) {
    const float inv = 1.0f / acc.L[r];
    float* o = out + rows.offset(r);
    for (int64_t d = 0; d < head_dim_; ++d) o[d] = acc.O[r * dpad_ + d] * inv;
  }
}

void AttentionTile::attend(const float* q, int64_t ldq, const TileRows& rows, const KeyMask& mask, const void* kp,
                           const void* vp, float* out, float* scratch) const {
  const int64_t n = rows.count;
  if (n > kMaxTileRows) throw Error("attention tile: more than 32 rows");
  const Accumulators acc{scratch, scratch + n * kKeyBlock, scratch + n * (kKeyBlock + dpad_),
                         scratch + n * (kKeyBlock + dpad_) + n};
  std::fill(acc.O, acc.O + n * dpad_, 0.0f);
  std::fill(acc.M, acc.M + n, -std::numeric_limits<float>::infinity());
  std::fill(acc.L, acc.L + n, 0.0f);
  const int64_t n_keys = mask.most(rows);  // the keys the furthest row sees
  const int64_t keys_pad = (n_keys + P_ - 1) / P_ * P_;
  for (int64_t kb = 0; kb < n_keys; kb += kKeyBlock) {
    const int64_t nk = std::min(kKeyBlock, keys_pad - kb);
    scores(q, ldq, n, static_cast<const uint8_t*>(kp), kb, nk, acc.S);
    softmax_rows(rows, mask, kb, nk, acc);
    add_pv(n, static_cast<const uint8_t*>(vp), kb, nk, acc);
  }
  normalise(rows, acc, out);
}

}  // namespace ckjit::jit
