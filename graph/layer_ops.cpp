#include "graph/layer_ops.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "graph/layer_ops_kernels.h"
#include "jit/hand_kernels.h"
#include "runtime/error.h"

namespace ckjit::graph {

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
  const float mean = float(sum / double(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void rms_norm_vectors(const float* x, int64_t ldx, const float* w, float* y, int64_t ldy, int64_t count, int64_t n, float eps) {
  int64_t v = 0;
  for (; v + 4 <= count; v += 4) {
    const float *x0 = x + v * ldx, *x1 = x0 + ldx, *x2 = x1 + ldx, *x3 = x2 + ldx;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0, s3 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
      s0 += double(x0[i] * x0[i]);
      s1 += double(x1[i] * x1[i]);
      s2 += double(x2[i] * x2[i]);
      s3 += double(x3[i] * x3[i]);
    }
    const double sums[4] = {s0, s1, s2, s3};
    for (int64_t j = 0; j < 4; ++j) {
      const float* xj = x + (v + j) * ldx;
      float* yj = y + (v + j) * ldy;
      const float scale = 1.0f / std::sqrt(float(sums[j] / double(n)) + eps);
      for (int64_t i = 0; i < n; ++i) yj[i] = (xj[i] * scale) * w[i];
    }
  }
  for (; v < count; ++v) rms_norm(x + v * ldx, w, y + v * ldy, n, eps);
}

// ---- the attention rows and swiglu: one copy each, chosen at construction ----
// The copies (layer_ops_kernels.h) in jit::hand_copies' order; jit::hand_isa picks for the Isa.
namespace {

constexpr jit::HandCopy<Attention::RowFn> kAttentionRows[] = {
    {jit::HandIsa::avx512, kernels::attention_row_avx512},
    {jit::HandIsa::avx2, kernels::attention_row_avx2},
    {jit::HandIsa::portable, kernels::attention_row_portable},
};
static_assert(jit::lists_the_copies(kAttentionRows, jit::HandOp::attention_rows));

using SwiGLUFn = void (*)(const float*, const float*, float*, int64_t);
constexpr jit::HandCopy<SwiGLUFn> kSwiGLUs[] = {
    {jit::HandIsa::avx512, kernels::swiglu_avx512},
    {jit::HandIsa::avx2, kernels::swiglu_avx2},
    {jit::HandIsa::portable, kernels::swiglu_portable},
};
static_assert(jit::lists_the_copies(kSwiGLUs, jit::HandOp::swiglu));

}  // namespace

Attention::Attention(const topo::Isa& isa) {
  const auto& c = jit::pick(kAttentionRows, jit::HandOp::attention_rows, isa);
  impl_ = jit::hand_isa_name(c.isa);
  row_ = c.fns;
}

SwiGLU::SwiGLU(const topo::Isa& isa) {
  const auto& c = jit::pick(kSwiGLUs, jit::HandOp::swiglu, isa);
  impl_ = jit::hand_isa_name(c.isa);
  fn_ = c.fns;
}

int64_t attention_scratch_floats(int64_t head_dim, int64_t n_ctx) { return (head_dim + n_ctx + 2 * head_dim + 15) / 16 * 16; }

void Attention::run(Workers& pool, const AttentionShape& s, const float* q, int64_t m, int64_t pos0,
                    const uint16_t* k_cache, const uint16_t* v_cache, float* out, float* scratch,
                    int64_t scratch_per_worker) const {
  const int64_t D = s.head_dim, q_width = s.n_head * D, kv_width = s.n_head_kv * D;
  const int64_t group = s.n_head / s.n_head_kv;
  if (D % 8 != 0) throw Error("attention: head dim must be a multiple of 8");
  if (D > kMaxHeadDim) throw Error("attention: head dim " + std::to_string(D) + " is above " + std::to_string(kMaxHeadDim));
  pool.run(size_t(m * s.n_head), [&](size_t task, int worker) {
    const int64_t i = int64_t(task) / s.n_head, h = int64_t(task) % s.n_head, kvh = h / group;
    float* mine = scratch + worker * scratch_per_worker;  // qh, acc: D halves each (D floats); then the scores
    uint16_t* qh = reinterpret_cast<uint16_t*>(mine);
    row_(s, q + i * q_width + h * D, pos0 + i + 1, k_cache + kvh * D, v_cache + kvh * D, kv_width,
         out + i * q_width + h * D, qh, qh + D, mine + D);
  });
}

}  // namespace ckjit::graph
