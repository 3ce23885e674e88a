#include "graph/layer_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "runtime/error.h"

namespace ckjit::graph {

void rms_norm(const float* x, const float* w, float* y, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);
  const float mean = float(sum / double(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

__attribute__((target("avx2,fma,f16c"))) void to_f16(const float* x, uint16_t* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
  for (; i < n; ++i) y[i] = uint16_t(_cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT));
}

namespace {

__attribute__((target("avx2,fma,f16c"))) inline float hsum(__m256 v) {
  __m128 lo = _mm256_castps256_ps128(v), hi = _mm256_extractf128_ps(v, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_movehdup_ps(lo));
  return _mm_cvtss_f32(lo);
}

// q (f32, already rounded through f16) · k (f16), d a multiple of 8.
__attribute__((target("avx2,fma,f16c"))) inline float dot_f16(const float* q, const uint16_t* k, int64_t d) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < d; i += 8) {
    __m256 kv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i)));
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), kv, acc);
  }
  return hsum(acc);
}

// out += p * v (f16), d a multiple of 8.
__attribute__((target("avx2,fma,f16c"))) inline void axpy_f16(float* out, float p, const uint16_t* v, int64_t d) {
  const __m256 pv = _mm256_set1_ps(p);
  for (int64_t i = 0; i < d; i += 8) {
    __m256 vv = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(v + i)));
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(pv, vv, _mm256_loadu_ps(out + i)));
  }
}

__attribute__((target("avx2,fma,f16c"))) void round_through_f16(const float* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; i += 8) {
    __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
}

}  // namespace

// ---- llama.cpp's CPU flash-attention row path, AVX-512 (ggml ops.cpp flash_attn_ext_f16_one_chunk) ----
// Per query row and head: Q rounded to f16; s = vec_dot_f16(k, q) (4 x 16-lane f32 FMA accumulators
// over 64-element steps, reduced (a0+a2)+(a1+a3) then _mm512_reduce_add_ps, tail in double) * scale;
// online softmax with the weighted V sum kept in an f16 buffer: on a new maximum the buffer is
// scaled by expf(Mold - M) (rounded to f16), then buffer = f16(fma(v, vs, buffer)); S = S*ms + vs;
// finally out = f32(buffer) * (1/S).
namespace {

__attribute__((target("avx512f,f16c,fma"))) float dot_f16_ggml(const uint16_t* x, const uint16_t* y, int64_t n) {
  const int64_t np = n & ~int64_t(63);
  __m512 sum[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
  for (int64_t i = 0; i < np; i += 64)
    for (int j = 0; j < 4; ++j) {
      __m512 ax = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i + 16 * j)));
      __m512 ay = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + i + 16 * j)));
      sum[j] = _mm512_fmadd_ps(ax, ay, sum[j]);
    }
  sum[0] = _mm512_add_ps(sum[0], sum[2]);
  sum[1] = _mm512_add_ps(sum[1], sum[3]);
  sum[0] = _mm512_add_ps(sum[0], sum[1]);
  double sumf = double(_mm512_reduce_add_ps(sum[0]));
  for (int64_t i = np; i < n; ++i) sumf += double(_cvtsh_ss(x[i]) * _cvtsh_ss(y[i]));
  return float(sumf);
}

__attribute__((target("avx512f,f16c,fma"))) void scale_f16(uint16_t* y, int64_t n, float v) {
  const int64_t np = n & ~int64_t(63);
  const __m512 vv = _mm512_set1_ps(v);
  for (int64_t i = 0; i < np; i += 16) {
    __m512 a = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), _mm512_cvtps_ph(_mm512_mul_ps(a, vv), _MM_FROUND_TO_NEAREST_INT));
  }
  for (int64_t i = np; i < n; ++i) y[i] = uint16_t(_cvtss_sh(_cvtsh_ss(y[i]) * v, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx512f,f16c,fma"))) void mad_f16(uint16_t* y, const uint16_t* x, int64_t n, float v) {
  const int64_t np = n & ~int64_t(63);
  const __m512 vv = _mm512_set1_ps(v);
  for (int64_t i = 0; i < np; i += 16) {
    __m512 ax = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + i)));
    __m512 ay = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(y + i)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i),
                        _mm512_cvtps_ph(_mm512_fmadd_ps(ax, vv, ay), _MM_FROUND_TO_NEAREST_INT));
  }
  for (int64_t i = np; i < n; ++i)
    y[i] = uint16_t(_cvtss_sh(std::fma(_cvtsh_ss(x[i]), v, _cvtsh_ss(y[i])), _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx512f,f16c,fma"))) void attention_row_ggml(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* kb, const uint16_t* vb,
                        int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc) {
  const int64_t D = s.head_dim;
  to_f16(q, qh, D);
  std::fill(acc, acc + D, uint16_t(0));
  float S = 0.0f, M = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float sc = dot_f16_ggml(kb + j * kv_width, qh, D) * s.scale;
    const float Mold = M;
    float ms = 1.0f, vs = 1.0f;
    if (sc > M) {
      M = sc;
      ms = std::exp(Mold - M);
      scale_f16(acc, D, ms);
    } else {
      vs = std::exp(sc - M);
    }
    mad_f16(acc, vb + j * kv_width, D, vs);
    S = std::fma(S, ms, vs);
  }
  const float inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int64_t d = 0; d < D; ++d) out[d] = _cvtsh_ss(acc[d]) * inv;
}

// Portable AVX2 variant (two-pass softmax in f32), for CPUs without AVX-512.
void attention_row_avx2(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* kb,
                        const uint16_t* vb, int64_t kv_width, float* out, float* qf, float* sc) {
  const int64_t D = s.head_dim;
  round_through_f16(q, qf, D);
  float mx = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    sc[j] = dot_f16(qf, kb + j * kv_width, D) * s.scale;
    mx = std::max(mx, sc[j]);
  }
  float sum = 0.0f;
  for (int64_t j = 0; j < n_keys; ++j) {
    sc[j] = std::exp(sc[j] - mx);
    sum += sc[j];
  }
  std::fill(out, out + D, 0.0f);
  for (int64_t j = 0; j < n_keys; ++j) axpy_f16(out, sc[j], vb + j * kv_width, D);
  const float inv = 1.0f / sum;
  for (int64_t d = 0; d < D; ++d) out[d] *= inv;
}

}  // namespace

bool swiglu_llama_available() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq");
}

namespace {
__attribute__((target("avx512f,avx512dq"))) inline __m512 exp_llama(__m512 x) {
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
}  // namespace

__attribute__((target("avx512f,avx512dq"))) void swiglu_llama(const float* g, const float* u, float* y, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    const __m512 x = _mm512_loadu_ps(g + i);
    const __m512 e = exp_llama(_mm512_sub_ps(_mm512_setzero_ps(), x));
    const __m512 s = _mm512_div_ps(x, _mm512_add_ps(one, e));
    _mm512_storeu_ps(y + i, _mm512_mul_ps(s, _mm512_loadu_ps(u + i)));
  }
  for (int64_t i = n / 16 * 16; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

int64_t attention_scratch_floats(int64_t head_dim, int64_t n_ctx) { return (head_dim + n_ctx + 2 * head_dim + 15) / 16 * 16; }

void attention(Workers& pool, const AttentionShape& s, const float* q, int64_t m, int64_t pos0, const uint16_t* k_cache,
               const uint16_t* v_cache, float* out, float* scratch, int64_t scratch_per_worker) {
  const int64_t D = s.head_dim, q_width = s.n_head * D, kv_width = s.n_head_kv * D;
  const int64_t group = s.n_head / s.n_head_kv;
  if (D % 8 != 0) throw Error("attention: head dim must be a multiple of 8");
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  pool.run(size_t(m * s.n_head), [&](size_t task, int worker) {
    const int64_t i = int64_t(task) / s.n_head, h = int64_t(task) % s.n_head, kvh = h / group;
    const int64_t n_keys = pos0 + i + 1;
    float* ws = scratch + worker * scratch_per_worker;
    const float* qr = q + i * q_width + h * D;
    float* o = out + i * q_width + h * D;
    if (avx512) {
      uint16_t* qh = reinterpret_cast<uint16_t*>(ws);
      attention_row_ggml(s, qr, n_keys, k_cache + kvh * D, v_cache + kvh * D, kv_width, o, qh, qh + D);
    } else {
      attention_row_avx2(s, qr, n_keys, k_cache + kvh * D, v_cache + kvh * D, kv_width, o, ws, ws + D);
    }
  });
}

}  // namespace ckjit::graph
