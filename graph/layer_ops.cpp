#include "graph/layer_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

#include "jit/isa_select.h"
#include "runtime/error.h"
#include "runtime/gcc12_avx512_warnings.h"

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

__attribute__((target("avx2,fma,f16c"))) void to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = uint16_t(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}

// ---- llama.cpp's CPU flash-attention row path, AVX-512 (ggml ops.cpp flash_attn_ext_f16_one_chunk) ----
// Per query row and head: Q rounded to f16; s = vec_dot_f16(k, q) (4 x 16-lane f32 FMA accumulators
// over 64-element steps, reduced (a0+a2)+(a1+a3) then _mm512_reduce_add_ps, tail in double) * scale;
// online softmax with the weighted V sum kept in an f16 buffer: on a new maximum the buffer is
// scaled by expf(Mold - M) (rounded to f16), then buffer = f16(fma(v, vs, buffer)); S = S*ms + vs;
// finally out = f32(buffer) * (1/S).
// The AVX2 kernels keep each 16-lane accumulator as two ymm halves (lanes 0-7, 8-15) and do the same
// per-lane operations, so both paths produce the same bits. The tails (elements past the last whole
// 64) are shared scalar code.
namespace {

__attribute__((target("f16c"))) float h2f(uint16_t h) { return _cvtsh_ss(h); }
__attribute__((target("f16c"))) uint16_t f2h(float f) { return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }

// ggml's scalar tails: products in float, dot sum in double; mad fused as GCC contracts it.
// y: the f16 query widened to f32 once per row (exact), so the dot converts only the keys.
double dot_tail(const uint16_t* x, const float* y, int64_t i, int64_t n, double sumf) {
  for (; i < n; ++i) sumf += double(h2f(x[i]) * y[i]);
  return sumf;
}
void scale_tail(uint16_t* y, int64_t i, int64_t n, float v) {
  for (; i < n; ++i) y[i] = f2h(h2f(y[i]) * v);
}
void mad_tail(uint16_t* y, const uint16_t* x, int64_t i, int64_t n, float v) {
  for (; i < n; ++i) y[i] = f2h(std::fma(h2f(x[i]), v, h2f(y[i])));
}

CKJIT_AVX512_INTRINSICS_BEGIN
__attribute__((target("avx512f,f16c,fma"))) inline __m512 load_h16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
__attribute__((target("avx512f,f16c,fma"))) inline void store_h16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx512f,f16c,fma"))) float dot_f16_avx512(const uint16_t* x, const float* y, int64_t n) {
  const int64_t np = n & ~int64_t(63);
  __m512 s0 = _mm512_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;  // named: an array lived on the stack
  for (int64_t i = 0; i < np; i += 64) {
    s0 = _mm512_fmadd_ps(load_h16(x + i), _mm512_loadu_ps(y + i), s0);
    s1 = _mm512_fmadd_ps(load_h16(x + i + 16), _mm512_loadu_ps(y + i + 16), s1);
    s2 = _mm512_fmadd_ps(load_h16(x + i + 32), _mm512_loadu_ps(y + i + 32), s2);
    s3 = _mm512_fmadd_ps(load_h16(x + i + 48), _mm512_loadu_ps(y + i + 48), s3);
  }
  s0 = _mm512_add_ps(s0, s2);
  s1 = _mm512_add_ps(s1, s3);
  s0 = _mm512_add_ps(s0, s1);
  return float(dot_tail(x, y, np, n, double(_mm512_reduce_add_ps(s0))));
}

__attribute__((target("avx512f,f16c,fma"))) void scale_f16_avx512(uint16_t* y, int64_t n, float v) {
  const int64_t np = n & ~int64_t(63);
  const __m512 vv = _mm512_set1_ps(v);
  for (int64_t i = 0; i < np; i += 16) store_h16(y + i, _mm512_mul_ps(load_h16(y + i), vv));
  scale_tail(y, np, n, v);
}

__attribute__((target("avx512f,f16c,fma"))) void mad_f16_avx512(uint16_t* y, const uint16_t* x, int64_t n, float v) {
  const int64_t np = n & ~int64_t(63);
  const __m512 vv = _mm512_set1_ps(v);
  for (int64_t i = 0; i < np; i += 16) store_h16(y + i, _mm512_fmadd_ps(load_h16(x + i), vv, load_h16(y + i)));
  mad_tail(y, x, np, n, v);
}
CKJIT_AVX512_INTRINSICS_END

__attribute__((target("avx2,fma,f16c"))) inline __m256 load_h8(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
__attribute__((target("avx2,fma,f16c"))) inline void store_h8(uint16_t* p, __m256 v) {
  _mm_storeu_si128(reinterpret_cast<__m128i*>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

// GCC's _mm512_reduce_add_ps (avx512fintrin.h) on the zmm (lo, hi): t3 = hi + lo (8 lanes), t6 =
// upper + lower 128-bit halves of t3, t8 = t6 + t6 shuffled {2,3,0,1}, result t8[0] + t8[1].
__attribute__((target("avx2,fma,f16c"))) inline float reduce_add_16(__m256 lo, __m256 hi) {
  const __m256 t3 = _mm256_add_ps(hi, lo);
  const __m128 t6 = _mm_add_ps(_mm256_extractf128_ps(t3, 1), _mm256_castps256_ps128(t3));
  const __m128 t8 = _mm_add_ps(t6, _mm_shuffle_ps(t6, t6, _MM_SHUFFLE(1, 0, 3, 2)));
  return _mm_cvtss_f32(_mm_add_ss(t8, _mm_movehdup_ps(t8)));
}

// dot_f16_avx512 with accumulator j as (lj, hj). Named variables, not arrays: GCC kept an array of
// accumulators on the stack (a store and a reload per FMA, 2x slower).
__attribute__((target("avx2,fma,f16c"))) float dot_f16_avx2(const uint16_t* x, const float* y, int64_t n) {
  const int64_t np = n & ~int64_t(63);
  __m256 l0 = _mm256_setzero_ps(), h0 = l0, l1 = l0, h1 = l0, l2 = l0, h2 = l0, l3 = l0, h3 = l0;
  for (int64_t i = 0; i < np; i += 64) {
    l0 = _mm256_fmadd_ps(load_h8(x + i), _mm256_loadu_ps(y + i), l0);
    h0 = _mm256_fmadd_ps(load_h8(x + i + 8), _mm256_loadu_ps(y + i + 8), h0);
    l1 = _mm256_fmadd_ps(load_h8(x + i + 16), _mm256_loadu_ps(y + i + 16), l1);
    h1 = _mm256_fmadd_ps(load_h8(x + i + 24), _mm256_loadu_ps(y + i + 24), h1);
    l2 = _mm256_fmadd_ps(load_h8(x + i + 32), _mm256_loadu_ps(y + i + 32), l2);
    h2 = _mm256_fmadd_ps(load_h8(x + i + 40), _mm256_loadu_ps(y + i + 40), h2);
    l3 = _mm256_fmadd_ps(load_h8(x + i + 48), _mm256_loadu_ps(y + i + 48), l3);
    h3 = _mm256_fmadd_ps(load_h8(x + i + 56), _mm256_loadu_ps(y + i + 56), h3);
  }
  // (a0 + a2) + (a1 + a3) per half, as the AVX-512 path.
  const __m256 lo = _mm256_add_ps(_mm256_add_ps(l0, l2), _mm256_add_ps(l1, l3));
  const __m256 hi = _mm256_add_ps(_mm256_add_ps(h0, h2), _mm256_add_ps(h1, h3));
  return float(dot_tail(x, y, np, n, double(reduce_add_16(lo, hi))));
}

__attribute__((target("avx2,fma,f16c"))) void scale_f16_avx2(uint16_t* y, int64_t n, float v) {
  const int64_t np = n & ~int64_t(63);
  const __m256 vv = _mm256_set1_ps(v);
  for (int64_t i = 0; i < np; i += 8) store_h8(y + i, _mm256_mul_ps(load_h8(y + i), vv));
  scale_tail(y, np, n, v);
}

__attribute__((target("avx2,fma,f16c"))) void mad_f16_avx2(uint16_t* y, const uint16_t* x, int64_t n, float v) {
  const int64_t np = n & ~int64_t(63);
  const __m256 vv = _mm256_set1_ps(v);
  for (int64_t i = 0; i < np; i += 8) store_h8(y + i, _mm256_fmadd_ps(load_h8(x + i), vv, load_h8(y + i)));
  mad_tail(y, x, np, n, v);
}

// The online softmax of one row, shared by both ISAs (one std::exp, so one libm call for both).
template <float (*Dot)(const uint16_t*, const float*, int64_t), void (*Scale)(uint16_t*, int64_t, float),
          void (*Mad)(uint16_t*, const uint16_t*, int64_t, float)>
void attention_row(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* kb, const uint16_t* vb,
                   int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores) {
  const int64_t D = s.head_dim;
  to_f16(q, qh, D);
  float qf[kMaxHeadDim];
  for (int64_t d = 0; d < D; ++d) qf[d] = h2f(qh[d]);
  // Every score first: the dots are independent, so they overlap in the core instead of waiting on
  // the softmax chain of the previous key (the same products and sums, so the same bits).
  for (int64_t j = 0; j < n_keys; ++j) scores[j] = Dot(kb + j * kv_width, qf, D) * s.scale;
  std::fill(acc, acc + D, uint16_t(0));
  float S = 0.0f, M = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float sc = scores[j];
    const float Mold = M;
    float ms = 1.0f, vs = 1.0f;
    if (sc > M) {
      M = sc;
      ms = std::exp(Mold - M);
      Scale(acc, D, ms);
    } else {
      vs = std::exp(sc - M);
    }
    Mad(acc, vb + j * kv_width, D, vs);
    S = std::fma(S, ms, vs);
  }
  const float inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int64_t d = 0; d < D; ++d) out[d] = h2f(acc[d]) * inv;
}

bool runs_avx2(const topo::Isa& i) { return i.avx2 && i.fma && i.f16c; }
bool runs_avx512_attention(const topo::Isa& i) { return runs_avx2(i) && i.avx512f; }
bool runs_avx512_swiglu(const topo::Isa& i) { return runs_avx2(i) && i.avx512f && i.avx512dq; }

// The first entry of `list` whose predicate accepts isa; the last entry is the AVX2 floor.
template <class Impl, size_t N>
const Impl& pick(const Impl (&list)[N], const topo::Isa& isa, const char* op) {
  for (const Impl& c : list)
    if (c.runs(isa)) return c;
  throw Error(std::string(op) + ": ckjit needs at least AVX2 + FMA + F16C (have: " + isa.to_string() + ")");
}

struct AttentionImpl {
  const char* name;
  bool (*runs)(const topo::Isa&);
  Attention::RowFn row;
};
constexpr AttentionImpl kAttentionImpls[] = {
    {"avx512", runs_avx512_attention, attention_row<dot_f16_avx512, scale_f16_avx512, mad_f16_avx512>},
    {"avx2", runs_avx2, attention_row<dot_f16_avx2, scale_f16_avx2, mad_f16_avx2>},
};

}  // namespace

Attention::Attention(const topo::Isa& isa) {
  const AttentionImpl& c = pick(kAttentionImpls, isa, "attention");
  impl_ = c.name;
  row_ = c.row;
}

// ---- llama.cpp's swiglu (ggml_vec_swiglu_f32 with ggml_v_expf, AVX-512) ----
namespace {

// llama.cpp's scalar tail (ggml_silu_f32(x) * g), the same on every path.
void swiglu_tail(const float* g, const float* u, float* y, int64_t i, int64_t n) {
  for (; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

CKJIT_AVX512_INTRINSICS_BEGIN
__attribute__((target("avx512f,avx512dq"))) inline __m512 exp_llama_avx512(__m512 x) {
  const __m512 r = _mm512_set1_ps(0x1.8p23f);
  const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), r);
  const __m512 n = _mm512_sub_ps(z, r);
  const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f), _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
  const __mmask16 big = _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192), _CMP_GT_OQ);
  const __m512 u = _mm512_mul_ps(b, b);
  const __m512 p = _mm512_fmadd_ps(
      _mm512_fmadd_ps(_mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
                      _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
      u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
  const __m512 res = _mm512_scalef_ps(p, n);
  if (big == 0) return res;
  const __m512 alt = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ),
                                          _mm512_set1_ps(INFINITY), _mm512_setzero_ps());
  return _mm512_mask_blend_ps(big, res, alt);
}

__attribute__((target("avx512f,avx512dq"))) void swiglu_avx512(const float* g, const float* u, float* y, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(g + i);
    const __m512 e = exp_llama_avx512(_mm512_sub_ps(_mm512_setzero_ps(), x));
    const __m512 s = _mm512_div_ps(x, _mm512_add_ps(one, e));
    _mm512_storeu_ps(y + i, _mm512_mul_ps(s, _mm512_loadu_ps(u + i)));
  }
  swiglu_tail(g, u, y, n / 16 * 16, n);
}
CKJIT_AVX512_INTRINSICS_END

// 2^k from exponent bits, |k| <= 126.
__attribute__((target("avx2,fma"))) inline __m256 pow2i(__m256i k) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(k, _mm256_set1_epi32(127)), 23));
}

// _mm512_scalef_ps(p, n) for integral n with |n| <= 192 and p in [0.5, 2) (the lanes exp_llama keeps):
// p * 2^k1 with k1 = floor(n/2) is exact (a normal float), the product with 2^(n-k1) rounds once —
// the correctly rounded p * 2^n that scalef returns, denormal or overflowing results included.
__attribute__((target("avx2,fma"))) inline __m256 scalef_avx2(__m256 p, __m256 n) {
  const __m256i k = _mm256_cvttps_epi32(n);
  const __m256i k1 = _mm256_srai_epi32(k, 1);
  return _mm256_mul_ps(_mm256_mul_ps(p, pow2i(k1)), pow2i(_mm256_sub_epi32(k, k1)));
}

// exp_llama_avx512 lane for lane on 8 lanes.
__attribute__((target("avx2,fma"))) inline __m256 exp_llama_avx2(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f), _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 abs_n = _mm256_and_ps(n, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
  const __m256 big = _mm256_cmp_ps(abs_n, _mm256_set1_ps(192), _CMP_GT_OQ);
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 p = _mm256_fmadd_ps(
      _mm256_fmadd_ps(_mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
                      _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  const __m256 res = scalef_avx2(p, n);
  const __m256 alt = _mm256_blendv_ps(_mm256_set1_ps(INFINITY), _mm256_setzero_ps(),
                                      _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ));
  return _mm256_blendv_ps(res, alt, big);
}

__attribute__((target("avx2,fma"))) inline void swiglu8_avx2(const float* g, const float* u, float* y) {
  const __m256 x = _mm256_loadu_ps(g);
  const __m256 e = exp_llama_avx2(_mm256_sub_ps(_mm256_setzero_ps(), x));
  const __m256 s = _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
  _mm256_storeu_ps(y, _mm256_mul_ps(s, _mm256_loadu_ps(u)));
}

// Whole 16-element chunks as the AVX-512 path, so the scalar tail covers the same elements.
__attribute__((target("avx2,fma"))) void swiglu_avx2(const float* g, const float* u, float* y, int64_t n) {
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    swiglu8_avx2(g + i, u + i, y + i);
    swiglu8_avx2(g + i + 8, u + i + 8, y + i + 8);
  }
  swiglu_tail(g, u, y, n / 16 * 16, n);
}

struct SwiGLUImpl {
  const char* name;
  bool (*runs)(const topo::Isa&);
  void (*fn)(const float*, const float*, float*, int64_t);
};
constexpr SwiGLUImpl kSwiGLUImpls[] = {
    {"avx512", runs_avx512_swiglu, swiglu_avx512},
    {"avx2", runs_avx2, swiglu_avx2},
};

}  // namespace

SwiGLU::SwiGLU(const topo::Isa& isa) {
  const SwiGLUImpl& c = pick(kSwiGLUImpls, isa, "swiglu");
  impl_ = c.name;
  fn_ = c.fn;
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
