#include "jit/attention_tile.h"

#include <algorithm>
#include <limits>

#include "jit/kernels.h"
#include "jit/tile_softmax.h"
#include "runtime/error.h"

namespace ckjit::jit {

// The tile's scratch: scores, output rows and each row's running max and sum.
struct AttentionTile::Accumulators {
  float* S;  // rows x kKeyBlock
  float* O;  // rows x head_dim
  float* M;
  float* L;
};

AttentionTile::AttentionTile(int64_t head_dim, int64_t panel_keys, const std::vector<int64_t>& block_keys, float scale)
    : head_dim_(head_dim), panel_keys_(panel_keys), scale_(scale), pv_fns_(size_t(kKeyBlock / 8 * kMr * kNr), nullptr) {
  if (head_dim % 8 != 0) throw Error("attention tile: head dim must be a multiple of 8");
  for (int mr = 1; mr <= kMr; ++mr)
    for (int nr = 1; nr <= kNr; ++nr)
      score_fns_.push_back(dense_kernel(TensorType::F16, mr, nr, head_dim, head_dim, false, Epilogue::Store));
  for (int64_t nk : block_keys) {
    if (nk % 8 != 0 || nk < 8 || nk > kKeyBlock) throw Error("attention tile: bad key block length");
    for (int mr = 1; mr <= kMr; ++mr)
      for (int nr = 1; nr <= kNr; ++nr)
        pv_fns_[size_t(((nk / 8 - 1) * kMr + mr - 1) * kNr + nr - 1)] =
            dense_kernel(TensorType::F16, mr, nr, nk, panel_keys, true, Epilogue::Store);
  }
}

GemmFn AttentionTile::pv_kernel(int64_t nk, int mr, int nr) const {
  const GemmFn fn = pv_fns_[size_t(((nk / 8 - 1) * kMr + mr - 1) * kNr + nr - 1)];
  if (!fn) throw Error("attention tile: no kernel for a key block of this length");
  return fn;
}

// S = Q K^T for keys [kb, kb + nk): key panels are the "weights" (head_dim x 8 each).
void AttentionTile::scores(const float* q, int64_t ldq, int64_t rows, const uint16_t* kp, int64_t kb, int64_t nk,
                           float* S) const {
  const int64_t D = head_dim_, kpanels = nk / 8;
  GemmArgs a;
  for (int64_t r = 0; r < rows; r += kMr) {
    const int mr = int(std::min<int64_t>(kMr, rows - r));
    for (int64_t p = 0; p < kpanels; p += kNr) {
      const int nr = int(std::min<int64_t>(kNr, kpanels - p));
      a.w = reinterpret_cast<const uint8_t*>(kp + (kb / 8 + p) * D * 8);
      a.x = q + r * ldq, a.ldx = ldq * 4;
      a.y = S + r * kKeyBlock + p * 8, a.ldy = kKeyBlock * 4;
      score_fns_[size_t((mr - 1) * kNr + nr - 1)](&a);
    }
  }
}

// Softmax step of every row over the keys it sees; earlier output rescaled by alpha.
void AttentionTile::softmax_rows(const TileRows& rows, const KeyMask& mask, int64_t kb, int64_t nk,
                                 const Accumulators& acc) const {
  const int64_t D = head_dim_;
  for (int64_t r = 0; r < rows.count; ++r) {
    const int64_t valid = std::clamp<int64_t>(mask.seen(rows, r) - kb, 0, nk);
    const float alpha = softmax_step(acc.S + r * kKeyBlock, nk, valid, scale_, acc.M[r], acc.L[r]);
    if (kb > 0 && alpha != 1.0f)  // x * 1 == x: skipping it changes no bit
      for (int64_t d = 0; d < D; ++d) acc.O[r * D + d] *= alpha;
  }
}

// O += P V: value panels (8 dims x all keys) are the "weights"; the chain continues in O.
void AttentionTile::add_pv(int64_t rows, const uint16_t* vp, int64_t kb, int64_t nk, const Accumulators& acc) const {
  const int64_t D = head_dim_, dpanels = D / 8;
  GemmArgs a;
  for (int64_t r = 0; r < rows; r += kMr) {
    const int mr = int(std::min<int64_t>(kMr, rows - r));
    for (int64_t p = 0; p < dpanels; p += kNr) {
      const int nr = int(std::min<int64_t>(kNr, dpanels - p));
      a.w = reinterpret_cast<const uint8_t*>(vp + p * panel_keys_ * 8 + kb * 8);
      a.x = acc.S + r * kKeyBlock, a.ldx = kKeyBlock * 4;
      a.y = acc.O + r * D + p * 8, a.ldy = D * 4;
      pv_kernel(nk, mr, nr)(&a);
    }
  }
}

void AttentionTile::normalise(const TileRows& rows, const Accumulators& acc, float* out) const {
  const int64_t D = head_dim_;
  for (int64_t r = 0; r < rows.count; ++r) {
    const float inv = 1.0f / acc.L[r];
    float* o = out + rows.offset(r);
    for (int64_t d = 0; d < D; ++d) o[d] = acc.O[r * D + d] * inv;
  }
}

void AttentionTile::attend(const float* q, int64_t ldq, const TileRows& rows, const KeyMask& mask, const uint16_t* kp,
                           const uint16_t* vp, float* out, float* scratch) const {
  const int64_t n = rows.count;
  const Accumulators acc{scratch, scratch + n * kKeyBlock, scratch + n * (kKeyBlock + head_dim_),
                         scratch + n * (kKeyBlock + head_dim_) + n};
  std::fill(acc.O, acc.O + n * head_dim_, 0.0f);
  std::fill(acc.M, acc.M + n, -std::numeric_limits<float>::infinity());
  std::fill(acc.L, acc.L + n, 0.0f);
  const int64_t n_keys = mask.most(rows);  // the keys the furthest row sees
  const int64_t keys_pad = (n_keys + 7) / 8 * 8;
  for (int64_t kb = 0; kb < n_keys; kb += kKeyBlock) {
    const int64_t nk = std::min(kKeyBlock, keys_pad - kb);
    scores(q, ldq, n, kp, kb, nk, acc.S);
    softmax_rows(rows, mask, kb, nk, acc);
    add_pv(n, vp, kb, nk, acc);
  }
  normalise(rows, acc, out);
}

}  // namespace ckjit::jit
