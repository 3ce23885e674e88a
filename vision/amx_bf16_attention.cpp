#include "vision/amx_bf16_attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <immintrin.h>
#include <limits>

#include "jit/bf16_rows.h"
#include "jit/executor.h"
#include "jit/isa_select.h"
#include "jit/kernel_args.h"
#include "jit/reference.h"
#include "runtime/error.h"
#include "runtime/gcc12_avx512_warnings.h"
#include "runtime/quants/quants.h"

namespace ckjit::vision {
namespace {

constexpr int64_t kRows = jit::kAmxDenseRows, kAlign = jit::AmxBf16Layout::kPairCols;

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

CKJIT_AVX512_INTRINSICS_BEGIN
// 2^t for t <= 0 on 16 lanes: t = n + f (n = round(t), |f| <= 1/2), 2^f by its Taylor polynomial of
// degree 5 (relative error < 3e-6: far below the bf16 rounding of the result), scaled by 2^n.
__attribute__((target("avx512f"))) inline __m512 exp2_16(__m512 t) {
  const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 f = _mm512_sub_ps(t, n);
  __m512 y = _mm512_set1_ps(1.3333558e-3f);
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(9.6181291e-3f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(5.5504109e-2f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(2.4022651e-1f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(6.9314718e-1f));
  y = _mm512_fmadd_ps(y, f, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(y, n);
}

// One score row s (n of its n_pad entries real keys) to softmax weights: p = exp(scale (s - max)),
// rounded to bf16 into p_out (the padded keys exactly 0); returns the sum of the f32 weights
// (16 lanes, two accumulators, then reduced: a fixed order).
__attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16"))) float softmax_row_bf16(const float* s, int64_t n, int64_t n_pad,
                                                                                    float scale, uint16_t* p_out) {
  auto valid = [n](int64_t j) { return j + 16 <= n ? __mmask16(0xffff) : j >= n ? __mmask16(0) : __mmask16((1u << (n - j)) - 1); };
  __m512 mx = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t j = 0; j < n; j += 16) mx = _mm512_mask_max_ps(mx, valid(j), mx, _mm512_loadu_ps(s + j));
  const float c = scale * 1.44269504088896341f;  // exp(scale x) = 2^(c x)
  const __m512 cv = _mm512_set1_ps(c), mv = _mm512_set1_ps(_mm512_reduce_max_ps(mx) * c);
  __m512 sum0 = _mm512_setzero_ps(), sum1 = _mm512_setzero_ps();
  for (int64_t j = 0; j < n_pad; j += 16) {
    const __m512 p = _mm512_maskz_mov_ps(valid(j), exp2_16(_mm512_fmsub_ps(_mm512_loadu_ps(s + j), cv, mv)));
    if ((j / 16) % 2 == 0) sum0 = _mm512_add_ps(sum0, p);
    else sum1 = _mm512_add_ps(sum1, p);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p_out + j), reinterpret_cast<__m256i>(_mm512_cvtneps_pbh(p)));
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(sum0, sum1));
}
CKJIT_AVX512_INTRINSICS_END

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
  std::vector<uint16_t> kb(static_cast<size_t>(dk_), 0), vb(static_cast<size_t>(dk_), 0);
  for (int64_t j = 0; j < n_; ++j) {
    jit::to_bf16(qkv + j * ld + C + h * dh_, kb.data(), dh_);
    jit::to_bf16(qkv + j * ld + 2 * C + h * dh_, vb.data(), dh_);
    // A key's dims go in pairs (4 bytes) to its column of the B tiles; a value's dims one by one.
    for (int64_t d = 0; d < dh_; d += 2) std::memcpy(kp + k_lay_.offset(j, d), kb.data() + d, 4);
    for (int64_t d = 0; d < dh_; ++d) std::memcpy(vp + v_lay_.offset(d, j), vb.data() + d, 2);
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
  // Softmax per row over the n real keys (the padded ones get exactly 0), P in bf16; rows past the
  // tile's real ones are zero.
  for (int64_t r = 0; r < rows; ++r) l[r] = softmax_row_bf16(S + r * n_pad_, n_, n_pad_, scale_, P + r * n_pad_);
  std::fill(P + rows * n_pad_, P + kRows * n_pad_, uint16_t(0));
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
