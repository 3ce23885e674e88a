#include "graph/tiled_attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "graph/tile_softmax.h"
#include "jit/kernels.h"
#include "runtime/error.h"

namespace ckjit::graph {

namespace {
void call(const void* fn, const jit::GemmArgs& a) { reinterpret_cast<jit::GemmFn>(const_cast<void*>(fn))(&a); }

// q rounded to f16 and back (exact), as llama.cpp's flash attention converts Q.
__attribute__((target("avx2,f16c"))) void round_row_f16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8)
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
}
}  // namespace

TiledAttention::TiledAttention(const AttentionShape& s, int64_t n_pad) : s_(s), n_pad_(n_pad) {
  if (s.head_dim % 8 != 0) throw Error("attention: head dim must be a multiple of 8");
  if (s.n_head_kv < 1 || s.n_head % s.n_head_kv != 0) throw Error("attention: query heads must be a multiple of KV heads");
  group_ = s.n_head / s.n_head_kv;
  positions_per_tile_ = std::max<int64_t>(1, 32 / group_);
  rows_cap_ = positions_per_tile_ * group_;
  const int64_t D = s.head_dim;
  for (int mr = 1; mr <= kMr; ++mr)
    for (int nr = 1; nr <= kNr; ++nr)
      score_fns_.push_back(reinterpret_cast<const void*>(jit::dense_kernel(TensorType::F16, mr, nr, D, D, false, jit::Epilogue::Store)));
  for (int64_t nk = 8; nk <= std::min(kTk, n_pad); nk += 8)  // a block never reaches past the cache
    for (int mr = 1; mr <= kMr; ++mr)
      for (int nr = 1; nr <= kNr; ++nr)
        pv_fns_.push_back(reinterpret_cast<const void*>(jit::dense_kernel(TensorType::F16, mr, nr, nk, n_pad, true, jit::Epilogue::Store)));
}

void TiledAttention::attend_tile(const KvCache& kv, int64_t layer, int64_t kvh, const float* q, int64_t i0,
                                 int64_t tp, int64_t pos0, float* out, float* scratch) const {
  const int64_t D = s_.head_dim, Qw = s_.n_head * D, rows = tp * group_;
  float* S = scratch;          // rows_cap x kTk
  float* Qt = S + rows_cap_ * kTk;  // rows x D: row g * tp + i is head (kvh * group + g) of position i0 + i
  float* O = Qt + rows_cap_ * D;    // rows x D
  float* M = O + rows_cap_ * D;
  float* L = M + rows_cap_;
  for (int64_t g = 0; g < group_; ++g)
    for (int64_t i = 0; i < tp; ++i) round_row_f16(q + (i0 + i) * Qw + (kvh * group_ + g) * D, Qt + (g * tp + i) * D, D);
  std::fill(O, O + rows * D, 0.0f);
  std::fill(M, M + rows, -std::numeric_limits<float>::infinity());
  std::fill(L, L + rows, 0.0f);
  const uint16_t* kp = kv.k_panels(layer, kvh);
  const uint16_t* vp = kv.v_panels(layer, kvh);
  const int64_t n_keys = pos0 + i0 + tp;  // the last row sees slots [0, n_keys)
  const int64_t keys_pad = (n_keys + 7) / 8 * 8;
  jit::GemmArgs a;
  for (int64_t kb = 0; kb < n_keys; kb += kTk) {
    const int64_t nk = std::min(kTk, keys_pad - kb), kpanels = nk / 8;
    for (int64_t r = 0; r < rows; r += kMr) {
      const int mr = int(std::min<int64_t>(kMr, rows - r));
      for (int64_t p = 0; p < kpanels; p += kNr) {
        const int nr = int(std::min<int64_t>(kNr, kpanels - p));
        a.w = reinterpret_cast<const uint8_t*>(kp + (kb / 8 + p) * D * 8);
        a.x = Qt + r * D, a.ldx = D * 4;
        a.y = S + r * kTk + p * 8, a.ldy = kTk * 4;
        call(score_fns_[size_t((mr - 1) * kNr + nr - 1)], a);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t seen = pos0 + i0 + r % tp + 1;  // slots row r attends to
      const int64_t valid = std::clamp<int64_t>(seen - kb, 0, nk);
      const float alpha = softmax_step(S + r * kTk, nk, valid, s_.scale, M[r], L[r]);
      if (kb > 0 && alpha != 1.0f)  // x * 1 == x: skipping it changes no bit
        for (int64_t d = 0; d < D; ++d) O[r * D + d] *= alpha;
    }
    const size_t pv0 = size_t(nk / 8 - 1) * kMr * kNr;
    for (int64_t r = 0; r < rows; r += kMr) {
      const int mr = int(std::min<int64_t>(kMr, rows - r));
      for (int64_t p = 0; p < D / 8; p += kNr) {
        const int nr = int(std::min<int64_t>(kNr, D / 8 - p));
        a.w = reinterpret_cast<const uint8_t*>(vp + p * n_pad_ * 8 + kb * 8);
        a.x = S + r * kTk, a.ldx = kTk * 4;
        a.y = O + r * D + p * 8, a.ldy = D * 4;
        call(pv_fns_[pv0 + size_t((mr - 1) * kNr + nr - 1)], a);
      }
    }
  }
  for (int64_t g = 0; g < group_; ++g)
    for (int64_t i = 0; i < tp; ++i) {
      const int64_t r = g * tp + i;
      const float inv = 1.0f / L[r];
      float* o = out + (i0 + i) * Qw + (kvh * group_ + g) * D;
      for (int64_t d = 0; d < D; ++d) o[d] = O[r * D + d] * inv;
    }
}

void TiledAttention::run(Workers& pool, const float* q, int64_t m, int64_t pos0, const KvCache& kv, int64_t layer, float* out,
                         float* scratch) const {
  if (kv.layout() != KvLayout::panels || kv.n_pad() != n_pad_) throw Error("tiled attention: the KV cache is not the panel cache it was built for");
  const int64_t tiles = (m + positions_per_tile_ - 1) / positions_per_tile_;
  pool.run(size_t(s_.n_head_kv * tiles), [&](size_t t, int worker) {
    // The last positions see the most keys: hand their tiles out first (the pool is dynamic).
    const int64_t kvh = int64_t(t) % s_.n_head_kv, pt = tiles - 1 - int64_t(t) / s_.n_head_kv;
    const int64_t i0 = pt * positions_per_tile_, tp = std::min(positions_per_tile_, m - i0);
    attend_tile(kv, layer, kvh, q, i0, tp, pos0, out, scratch + worker * scratch_floats());
  });
}

}  // namespace ckjit::graph
