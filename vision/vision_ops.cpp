#include "vision/vision_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "jit/hand_kernels.h"
#include "jit/isa_select.h"
#include "runtime/error.h"
#include "runtime/quants/f16_rows.h"
#include "runtime/quants/quants.h"
#include "vision/dense_linear.h"
#include "vision/vision_ops_kernels.h"

namespace ckjit::vision {
namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

}  // namespace

// The copies of the f16 row ops, in jit::hand_copies' order (HandOp::f16_rows); jit::hand_isa picks.
namespace {
constexpr jit::HandCopy<RoundF16> kRoundF16[] = {
    {jit::HandIsa::avx2, quant::round_f16_rows_avx2},
    {jit::HandIsa::portable, quant::round_f16_rows},
};
static_assert(jit::lists_the_copies(kRoundF16, jit::HandOp::f16_rows));

using GeluRows = void (*)(const float* table, float* x, int64_t n);
constexpr jit::HandCopy<GeluRows> kGeluRows[] = {
    {jit::HandIsa::avx2, kernels::gelu_rows_avx2},
    {jit::HandIsa::portable, kernels::gelu_rows_portable},
};
static_assert(jit::lists_the_copies(kGeluRows, jit::HandOp::f16_rows));
}  // namespace

RoundF16 round_f16_for(const topo::Isa& isa) { return jit::pick(kRoundF16, jit::HandOp::f16_rows, isa).fns; }

void layer_norm_rows(Workers& pool, const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows, int64_t n,
                     const float* w, const float* b, float eps) {
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* xr = x + r * ldx;
      float* yr = y + r * ldy;
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) sum += double(xr[i]);
      const float mean = float(sum / double(n));
      double sum2 = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const float v = xr[i] - mean;
        yr[i] = v;
        sum2 += double(v * v);
      }
      const float var = float(sum2 / double(n));
      const float scale = 1.0f / std::sqrt(var + eps);
      for (int64_t i = 0; i < n; ++i) yr[i] = (yr[i] * scale) * w[i] + b[i];
    }
  });
}

GeluTable::GeluTable(const topo::Isa& isa) : table_(65536), rows_(jit::pick(kGeluRows, jit::HandOp::f16_rows, isa).fns) {
  const float kSqrt2OverPi = 0.79788456080286535587989211986876f, kA = 0.044715f;
  for (uint32_t i = 0; i < 65536; ++i) {
    const float x = quant::f16_to_f32(uint16_t(i));
    const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kA * x * x)));
    table_[i] = quant::f16_to_f32(quant::f32_to_f16(g));
  }
}

float GeluTable::operator()(float x) const {
  if (x <= -10.0f) return 0.0f;
  if (x >= 10.0f) return x;
  return table_[quant::f32_to_f16(x)];
}

// The AVX2 copy's lanes in C++: whole groups of 8 index the table by vcvtps2ph's bits, the rest by
// f32_to_f16's (they differ only for some NaNs).
void kernels::gelu_rows_portable(const float* table, float* x, int64_t n) {
  const int64_t whole = n / 8 * 8;
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const uint16_t h = i < whole ? quant::f32_to_f16_f16c(v) : quant::f32_to_f16(v);
    x[i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : table[h];
  }
}

void GeluTable::apply(Workers& pool, float* x, int64_t ld, int64_t rows, int64_t n) const {
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) rows_(table_.data(), x + r * ld, n);
  });
}

Rope2d::Rope2d(int64_t gh, int64_t gw, int64_t dh) : head_dim(dh), n(gh * gw) {
  const int64_t half = dh / 2, q = dh / 4;
  cos.resize(size_t(n * half)), sin.resize(size_t(n * half));
  for (int64_t py = 0; py < gh; ++py)
    for (int64_t px = 0; px < gw; ++px) {
      const int64_t s = merge_index(py, px, gw);
      for (int64_t j = 0; j < half; ++j) {
        const int64_t m = j < q ? j : j - q;
        const double pos = double(j < q ? py : px);
        const double theta = pos * std::pow(10000.0, -4.0 * double(m) / double(dh));
        cos[size_t(s * half + j)] = float(std::cos(theta));
        sin[size_t(s * half + j)] = float(std::sin(theta));
      }
    }
}

void Rope2d::apply(Workers& pool, float* x, int64_t ld, int64_t n_head) const {
  const int64_t half = head_dim / 2;
  for_rows(pool, n, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* c = cos.data() + r * half;
      const float* s = sin.data() + r * half;
      for (int64_t h = 0; h < n_head; ++h) {
        float* v = x + r * ld + h * head_dim;
        for (int64_t j = 0; j < half; ++j) {
          const float x0 = v[j], x1 = v[j + half];
          v[j] = x0 * c[j] - x1 * s[j];
          v[j + half] = x0 * s[j] + x1 * c[j];
        }
      }
    }
  });
}

// ---- attention ----
namespace {

// Query rows per tile, at most: the tile takes the largest multiple of its register block (30 on
// avx512, 32 on avx2). Rows are independent, so this changes no bit.
constexpr int64_t kTileRows = 32;

// The key-block lengths of n_pad keys: full blocks and the last, shorter one.
std::vector<int64_t> full_block_keys(int64_t n_pad) {
  const int64_t kTk = jit::AttentionTile::kKeyBlock;
  return {std::min(kTk, n_pad), n_pad % kTk ? n_pad % kTk : kTk};
}

}  // namespace

VisionAttention::VisionAttention(int64_t n, int64_t n_head, int64_t head_dim, int threads, const topo::Isa& isa)
    : n_(n), n_head_(n_head), dh_(head_dim), P_(jit::panel_cols(jit::widest_dense_path(isa))), n_pad_(round_up(n, P_)),
      tile_(jit::widest_dense_path(isa), head_dim, n_pad_, full_block_keys(n_pad_), 1.0f / std::sqrt(float(head_dim)),
            TensorType::F32),
      tq_(kTileRows / tile_.block_rows() * tile_.block_rows()),
      dpad_(tile_.padded_dim()),
      round_f16_(round_f16_for(isa)) {
  kp_.assign(size_t(n_head_ * dh_ * n_pad_), 0.0f);
  vp_.assign(size_t(n_head_ * n_pad_ * dpad_), 0.0f);
  // Per worker: the tile's scratch, then its query rows; each starts on a cache line.
  scratch_per_worker_ = round_up(tile_.scratch_floats(tq_), 16) + round_up(tq_ * dh_, 16);
  scratch_.assign(size_t(scratch_per_worker_ * std::max(1, threads)), 0.0f);
}

VisionAttention::~VisionAttention() = default;

void VisionAttention::pack_head(const float* qkv, int64_t ld, int64_t h) const {
  const int64_t C = n_head_ * dh_;
  const int64_t P = P_;
  float* kp = kp_.data() + h * dh_ * n_pad_;
  float* vp = vp_.data() + h * n_pad_ * dpad_;
  // Keys: up to 128 dims at a time rounded on the stack, then spread down their panel column.
  // Values: each run of P dims rounded straight into its panel (the last one may be shorter).
  constexpr int64_t kChunk = 128;
  float kh[kChunk];
  for (int64_t j = 0; j < n_; ++j) {
    const float* kr = qkv + j * ld + C + h * dh_;
    const float* vr = qkv + j * ld + 2 * C + h * dh_;
    float* kcol = kp + (j / P) * dh_ * P + j % P;  // key j: every P-th float of its panel
    for (int64_t d0 = 0; d0 < dh_; d0 += kChunk) {
      const int64_t len = std::min(kChunk, dh_ - d0);
      round_f16_(kr + d0, kh, len);
      for (int64_t d = 0; d < len; ++d) kcol[(d0 + d) * P] = kh[d];
    }
    float* vrow = vp + j * P;  // value j: P floats in each d-panel
    for (int64_t d = 0, panel = 0; d < dh_; d += P, ++panel) round_f16_(vr + d, vrow + panel * n_pad_ * P, std::min(P, dh_ - d));
  }
}

void VisionAttention::run(Workers& pool, const float* qkv, int64_t ld, float* out, int64_t ldo) const {
  if (int64_t(scratch_.size()) < scratch_per_worker_ * pool.size()) throw Error("vision attention: more workers than planned");
  // Keys and values per head into panels of f16-rounded floats; padding stays 0.
  for_rows(pool, n_head_, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) pack_head(qkv, ld, h);
  });
  const int64_t n_qt = (n_ + tq_ - 1) / tq_;
  pool.run(size_t(n_head_ * n_qt), [&](size_t t, int worker) {
    const int64_t h = int64_t(t) / n_qt, qt = int64_t(t) % n_qt;
    const int64_t q0 = qt * tq_, rows = std::min(tq_, n_ - q0);
    const jit::TileRows tile_rows{rows, rows, ldo, 0};  // one head: row r is patch q0 + r
    float* scratch = scratch_.data() + worker * scratch_per_worker_;
    // The tile's queries rounded to f16 into dense rows (the score products read them once per key block).
    float* q = scratch + round_up(tile_.scratch_floats(tq_), 16);
    for (int64_t r = 0; r < rows; ++r) round_f16_(qkv + (q0 + r) * ld + h * dh_, q + r * dh_, dh_);
    tile_.attend(q, dh_, tile_rows, jit::KeyMask{n_, false}, kp_.data() + h * dh_ * n_pad_, vp_.data() + h * n_pad_ * dpad_,
                 out + q0 * ldo + h * dh_, scratch);
  });
}

}  // namespace ckjit::vision
