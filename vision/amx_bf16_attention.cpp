#include "vision/amx_bf16_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "jit/bf16_rows.h"
#include "jit/executor.h"
#include "jit/isa_select.h"
#include "jit/kernel_args.h"
#include "jit/reference.h"
#include "jit/tile_softmax.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"

namespace ckjit::vision {
namespace {

constexpr int64_t kRows = jit::kAmxDenseRows, kAlign = jit::AmxBf16Layout::kPairCols;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

jit::KernelSpec product_spec(int64_t k) {
  jit::KernelSpec s;
  s.op = jit::Op::Dense, s.wtype = TensorType::BF16, s.atype = TensorType::BF16, s.isa = jit::IsaPath::Amx;
  s.mr = jit::kAmxDenseRows, s.nr = jit::kAmxDensePanels, s.kc = int(k), s.k = k;
  return s;
}

void run_product(const jit::JitKernel& kern, jit::GemmArgs& a) {
  if (jit::scalar_twins()) jit::reference_kernel(kern.spec(), &a);
  else kern.as<jit::GemmFn>()(&a);
}

}  // namespace

bool AmxBf16Attention::runs(const topo::Isa& isa) { return jit::kernel_runs(product_spec(kAlign), isa); }

AmxBf16Attention::AmxBf16Attention(int64_t n, int64_t n_head, int64_t head_dim, int threads, const topo::Isa& isa)
    : n_(n), n_head_(n_head), dh_(head_dim), dk_(round_up(head_dim, kAlign)), n_pad_(round_up(n, kAlign)),
      k_lay_{n_pad_, dk_}, v_lay_{dk_, n_pad_}, scale_(1.0f / std::sqrt(float(head_dim))) {
  if (!runs(isa)) throw Error("vision attention: AMX-BF16 does not run on this CPU");
  if (n < 1 || n_head < 1 || head_dim < 1) throw Error("vision attention: empty shape");
  qk_ = &jit::global_code_cache().get(product_spec(dk_));
  pv_ = &jit::global_code_cache().get(product_spec(n_pad_));
  kp_.assign(size_t(n_head_ * k_lay_.bytes() / 2), 0);
  vp_.assign(size_t(n_head_ * v_lay_.bytes() / 2), 0);
  // Per worker: S (32 x n_pad floats), O (32 x dk), l (32); Q (32 x dk bf16), P (32 x n_pad bf16).
  floats_per_worker_ = round_up(kRows * n_pad_ + kRows * dk_ + kRows, 16);
  halves_per_worker_ = round_up(kRows * dk_ + kRows * n_pad_, 32);
  scratch_.assign(size_t(floats_per_worker_ * std::max(1, threads)), 0.0f);
  bf_scratch_.assign(size_t(halves_per_worker_ * std::max(1, threads)), 0);
}

// Key j and value j of head h into their B tiles (bf16, nearest even); padding stays 0.
void AmxBf16Attention::pack_head(const float* qkv, int64_t ld, int64_t h) const {
  const int64_t C = n_head_ * dh_;
  uint8_t* kp = reinterpret_cast<uint8_t*>(kp_.data()) + h * k_lay_.bytes();
  uint8_t* vp = reinterpret_cast<uint8_t*>(vp_.data()) + h * v_lay_.bytes();
  for (int64_t j = 0; j < n_; ++j) {
    const float* kr = qkv + j * ld + C + h * dh_;
    const float* vr = qkv + j * ld + 2 * C + h * dh_;
    for (int64_t d = 0; d < dh_; ++d) {
      const uint16_t kb = quant::f32_to_bf16(kr[d]), vb = quant::f32_to_bf16(vr[d]);
      std::memcpy(kp + k_lay_.offset(j, d), &kb, 2);
      std::memcpy(vp + v_lay_.offset(d, j), &vb, 2);
    }
  }
}

void AmxBf16Attention::attend_tile(const float* qkv, int64_t ld, int64_t h, int64_t q0, int64_t rows, float* out,
                                   int64_t ldo, int worker) const {
  float* S = scratch_.data() + worker * floats_per_worker_;
  float* O = S + kRows * n_pad_;
  float* l = O + kRows * dk_;
  uint16_t* Q = bf_scratch_.data() + worker * halves_per_worker_;
  uint16_t* P = Q + kRows * dk_;
  // The tile's queries in bf16, rows and dims past the real ones zero.
  std::fill(Q, Q + kRows * dk_, uint16_t(0));
  for (int64_t r = 0; r < rows; ++r) {
    const float* q = qkv + (q0 + r) * ld + h * dh_;
    if (jit::scalar_twins())
      for (int64_t d = 0; d < dh_; ++d) Q[r * dk_ + d] = quant::f32_to_bf16(q[d]);
    else
      jit::to_bf16(q, Q + r * dk_, dh_);
  }
  // S = Q K^T: every key of the head, 32 at a time.
  jit::GemmArgs a;
  a.x = Q, a.ldx = dk_ * 2, a.w = reinterpret_cast<const uint8_t*>(kp_.data()) + h * k_lay_.bytes(), a.ldr = k_lay_.pair_bytes();
  a.y = S, a.ldy = n_pad_ * 4, a.m = kRows, a.n = n_pad_;
  run_product(*qk_, a);
  // Softmax per row over the n real keys (the padded ones get exactly 0), then P in bf16.
  const float ninf = -std::numeric_limits<float>::infinity();
  const int64_t valid[4] = {n_, n_, n_, n_};
  for (int64_t r = 0; r < rows; r += 4) {  // up to 3 rows past `rows`: zero queries, results unused
    float m[4] = {ninf, ninf, ninf, ninf}, alpha[4];
    jit::softmax_rows16<4>(S + r * n_pad_, n_pad_, n_pad_, valid, scale_, m, l + r, alpha);
  }
  for (int64_t r = 0; r < kRows; ++r) {
    if (r >= rows) {
      std::fill(P + r * n_pad_, P + (r + 1) * n_pad_, uint16_t(0));
    } else if (jit::scalar_twins()) {
      for (int64_t j = 0; j < n_pad_; ++j) P[r * n_pad_ + j] = quant::f32_to_bf16(S[r * n_pad_ + j]);
    } else {
      jit::to_bf16(S + r * n_pad_, P + r * n_pad_, n_pad_);
    }
  }
  // O = P V over every key, then out = O / l.
  a.x = P, a.ldx = n_pad_ * 2, a.w = reinterpret_cast<const uint8_t*>(vp_.data()) + h * v_lay_.bytes(), a.ldr = v_lay_.pair_bytes();
  a.y = O, a.ldy = dk_ * 4, a.m = kRows, a.n = dk_;
  run_product(*pv_, a);
  for (int64_t r = 0; r < rows; ++r) {
    float* o = out + (q0 + r) * ldo + h * dh_;
    for (int64_t d = 0; d < dh_; ++d) o[d] = O[r * dk_ + d] / l[r];
  }
}

void AmxBf16Attention::run(Workers& pool, const float* qkv, int64_t ld, float* out, int64_t ldo) const {
  if (int64_t(scratch_.size()) < floats_per_worker_ * pool.size()) throw Error("vision attention: more workers than planned");
  for_rows(pool, n_head_, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) pack_head(qkv, ld, h);
  });
  const int64_t n_qt = (n_ + kRows - 1) / kRows;
  pool.run(size_t(n_head_ * n_qt), [&](size_t t, int worker) {
    const int64_t h = int64_t(t) / n_qt, q0 = (int64_t(t) % n_qt) * kRows;
    attend_tile(qkv, ld, h, q0, std::min(kRows, n_ - q0), out, ldo, worker);
  });
}

}  // namespace ckjit::vision
