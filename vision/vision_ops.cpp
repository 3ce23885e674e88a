#include "vision/vision_ops.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "runtime/error.h"
#include "runtime/quants/quants.h"

namespace ckjit::vision {
namespace {

int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// Runs fn(begin, end) over [0, count) in about 4 parts per worker.
template <class F>
void for_rows(graph::Workers& pool, int64_t count, const F& fn) {
  if (count <= 0) return;
  const int64_t parts = std::min<int64_t>(count, int64_t(pool.size()) * 4);
  pool.run(size_t(parts), [&](size_t t, int) {
    const graph::Range r = graph::split_range(count, parts, int64_t(t));
    if (r.begin < r.end) fn(r.begin, r.end);
  });
}

}  // namespace

void layer_norm_rows(graph::Workers& pool, const float* x, int64_t ldx, float* y, int64_t ldy, int64_t rows, int64_t n,
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

GeluTable::GeluTable() : table_(65536) {
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

__attribute__((target("avx2,f16c"))) static void gelu_row(const float* table, float* x, int64_t n) {
  int64_t i = 0;
  const __m256 lo = _mm256_set1_ps(-10.0f), hi = _mm256_set1_ps(10.0f);
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    __m256 g = _mm256_i32gather_ps(table, _mm256_cvtepu16_epi32(h), 4);
    g = _mm256_blendv_ps(g, _mm256_setzero_ps(), _mm256_cmp_ps(v, lo, _CMP_LE_OQ));
    g = _mm256_blendv_ps(g, v, _mm256_cmp_ps(v, hi, _CMP_GE_OQ));
    _mm256_storeu_ps(x + i, g);
  }
  for (; i < n; ++i) {
    const float v = x[i];
    x[i] = v <= -10.0f ? 0.0f : v >= 10.0f ? v : table[quant::f32_to_f16(v)];
  }
}

void GeluTable::apply(graph::Workers& pool, float* x, int64_t ld, int64_t rows, int64_t n) const {
  for_rows(pool, rows, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) gelu_row(table_.data(), x + r * ld, n);
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

void Rope2d::apply(graph::Workers& pool, float* x, int64_t ld, int64_t n_head) const {
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

constexpr int64_t kTq = 32, kTk = 256;

// exp on 8 lanes (Cephes-style range reduction and polynomial; ~1 ulp). Inputs below -88 give 0.
__attribute__((target("avx2,fma"))) inline __m256 exp8(__m256 x) {
  x = _mm256_max_ps(x, _mm256_set1_ps(-88.0f));
  x = _mm256_min_ps(x, _mm256_set1_ps(88.0f));
  const __m256 fx = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(0.693359375f), x);
  x = _mm256_fnmadd_ps(fx, _mm256_set1_ps(-2.12194440e-4f), x);
  __m256 y = _mm256_set1_ps(1.9875691500e-4f);
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.3981999507e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(8.3334519073e-3f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(4.1665795894e-2f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(1.6666665459e-1f));
  y = _mm256_fmadd_ps(y, x, _mm256_set1_ps(5.0000001201e-1f));
  y = _mm256_fmadd_ps(y, _mm256_mul_ps(x, x), _mm256_add_ps(x, _mm256_set1_ps(1.0f)));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(fx), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

__attribute__((target("avx2"))) inline float hsum8(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}
__attribute__((target("avx2"))) inline float hmax8(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Scores of R query rows (q rows ldq apart) x 16 keys (kt: dh rows of ldk floats): one FMA chain
// over d per score, then * scale.
template <int R>
__attribute__((target("avx2,fma"))) inline void scores_rx16(const float* q, int64_t ldq, const float* kt, int64_t ldk,
                                                              int64_t dh, float scale, float* s, int64_t lds) {
  __m256 a0[R], a1[R];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r) a0[r] = _mm256_setzero_ps(), a1[r] = _mm256_setzero_ps();
  for (int64_t d = 0; d < dh; ++d) {
    const __m256 k0 = _mm256_loadu_ps(kt + d * ldk), k1 = _mm256_loadu_ps(kt + d * ldk + 8);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const __m256 b = _mm256_broadcast_ss(q + r * ldq + d);
      a0[r] = _mm256_fmadd_ps(b, k0, a0[r]);
      a1[r] = _mm256_fmadd_ps(b, k1, a1[r]);
    }
  }
  const __m256 sc = _mm256_set1_ps(scale);
  for (int r = 0; r < R; ++r) {
    _mm256_storeu_ps(s + r * lds, _mm256_mul_ps(a0[r], sc));
    _mm256_storeu_ps(s + r * lds + 8, _mm256_mul_ps(a1[r], sc));
  }
}

// O[r][c0 .. c0 + 8W) += sum_j p[r][j] * v[j][c0 ..] for R rows, nk keys, in increasing j.
template <int R, int W>
__attribute__((target("avx2,fma"))) inline void pv_block(const float* p, int64_t ldp, const float* v, int64_t dh, int64_t nk,
                                                           float* o, int64_t ldo, int64_t c0) {
  __m256 acc[R][W];
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < W; ++w) acc[r][w] = _mm256_loadu_ps(o + r * ldo + c0 + 8 * w);
  for (int64_t j = 0; j < nk; ++j) {
    __m256 vv[W];
#pragma GCC unroll 4
    for (int w = 0; w < W; ++w) vv[w] = _mm256_loadu_ps(v + j * dh + c0 + 8 * w);
#pragma GCC unroll 2
    for (int r = 0; r < R; ++r) {
      const __m256 b = _mm256_broadcast_ss(p + r * ldp + j);
#pragma GCC unroll 4
      for (int w = 0; w < W; ++w) acc[r][w] = _mm256_fmadd_ps(b, vv[w], acc[r][w]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int w = 0; w < W; ++w) _mm256_storeu_ps(o + r * ldo + c0 + 8 * w, acc[r][w]);
}

template <int R>
__attribute__((target("avx2,fma"))) void pv_rows(const float* p, int64_t ldp, const float* v, int64_t dh, int64_t nk, float* o,
                                                 int64_t ldo) {
  int64_t c = 0;
  for (; c + 32 <= dh; c += 32) pv_block<R, 4>(p, ldp, v, dh, nk, o, ldo, c);
  for (; c < dh; c += 8) pv_block<R, 1>(p, ldp, v, dh, nk, o, ldo, c);
}

__attribute__((target("avx2,fma"))) void attend_tile(const float* q, int64_t ldq, int64_t rows, const float* kt, const float* v,
                                                     int64_t n, int64_t n_pad, int64_t dh, float* out, int64_t ldo, float* scratch) {
  float* S = scratch;                 // kTq x kTk
  float* O = S + kTq * kTk;           // kTq x dh
  float* M = O + kTq * dh;            // kTq
  float* L = M + kTq;                 // kTq
  std::fill(O, O + kTq * dh, 0.0f);
  std::fill(M, M + kTq, -std::numeric_limits<float>::infinity());
  std::fill(L, L + kTq, 0.0f);
  const float scale = 1.0f / std::sqrt(float(dh));
  for (int64_t kb = 0; kb < n_pad; kb += kTk) {
    const int64_t nk = std::min(kTk, n_pad - kb);
    for (int64_t r = 0; r < rows; r += 4) {
      const int64_t R = std::min<int64_t>(4, rows - r);
      for (int64_t j = 0; j < nk; j += 16) {
        const float* kp = kt + kb + j;
        float* sp = S + r * kTk + j;
        switch (R) {
          case 4: scores_rx16<4>(q + r * ldq, ldq, kp, n_pad, dh, scale, sp, kTk); break;
          case 3: scores_rx16<3>(q + r * ldq, ldq, kp, n_pad, dh, scale, sp, kTk); break;
          case 2: scores_rx16<2>(q + r * ldq, ldq, kp, n_pad, dh, scale, sp, kTk); break;
          default: scores_rx16<1>(q + r * ldq, ldq, kp, n_pad, dh, scale, sp, kTk); break;
        }
      }
    }
    const int64_t valid = std::min(nk, n - kb);  // keys past n are padding
    for (int64_t r = 0; r < rows; ++r) {
      float* s = S + r * kTk;
      for (int64_t j = valid; j < nk; ++j) s[j] = -std::numeric_limits<float>::infinity();
      __m256 mx = _mm256_loadu_ps(s);
      for (int64_t j = 8; j < nk; j += 8) mx = _mm256_max_ps(mx, _mm256_loadu_ps(s + j));
      const float m_new = std::max(M[r], hmax8(mx));
      const float alpha = M[r] == -std::numeric_limits<float>::infinity() ? 0.0f
                          : _mm256_cvtss_f32(exp8(_mm256_set1_ps(M[r] - m_new)));
      const __m256 mv = _mm256_set1_ps(m_new);
      __m256 sum = _mm256_setzero_ps();
      for (int64_t j = 0; j < nk; j += 8) {
        const __m256 p = exp8(_mm256_sub_ps(_mm256_loadu_ps(s + j), mv));
        _mm256_storeu_ps(s + j, p);
        sum = _mm256_add_ps(sum, p);
      }
      L[r] = L[r] * alpha + hsum8(sum);
      M[r] = m_new;
      if (kb > 0) {
        const __m256 av = _mm256_set1_ps(alpha);
        for (int64_t d = 0; d < dh; d += 8) _mm256_storeu_ps(O + r * dh + d, _mm256_mul_ps(_mm256_loadu_ps(O + r * dh + d), av));
      }
    }
    const float* vb = v + kb * dh;
    int64_t r = 0;
    for (; r + 2 <= rows; r += 2) pv_rows<2>(S + r * kTk, kTk, vb, dh, nk, O + r * dh, dh);
    if (r < rows) pv_rows<1>(S + r * kTk, kTk, vb, dh, nk, O + r * dh, dh);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const float inv = 1.0f / L[r];
    for (int64_t d = 0; d < dh; ++d) out[r * ldo + d] = O[r * dh + d] * inv;
  }
}

__attribute__((target("avx2,f16c"))) void round_f16_inplace(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT)));
  for (; i < n; ++i) x[i] = quant::f16_to_f32(quant::f32_to_f16(x[i]));
}

}  // namespace

VisionAttention::VisionAttention(int64_t n, int64_t n_head, int64_t head_dim, int threads)
    : n_(n), n_head_(n_head), dh_(head_dim), n_pad_(round_up(n, 16)) {
  if (head_dim % 8 != 0) throw Error("vision attention: head dim must be a multiple of 8");
  kt_.assign(size_t(n_head_ * dh_ * n_pad_), 0.0f);
  v_.assign(size_t(n_head_ * n_pad_ * dh_), 0.0f);
  scratch_per_worker_ = kTq * kTk + kTq * dh_ + 2 * kTq;
  scratch_.assign(size_t(scratch_per_worker_ * std::max(1, threads)), 0.0f);
}

VisionAttention::~VisionAttention() = default;

void VisionAttention::run(graph::Workers& pool, float* qkv, int64_t ld, float* out, int64_t ldo) const {
  const int64_t C = n_head_ * dh_;
  if (int64_t(scratch_.size()) < scratch_per_worker_ * pool.size()) throw Error("vision attention: more workers than planned");
  for_rows(pool, n_, [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) round_f16_inplace(qkv + r * ld, 3 * C);
  });
  // Keys transposed per head (dh x n_pad) and values per head (n_pad x dh); padding stays zero.
  for_rows(pool, n_head_, [&](int64_t h0, int64_t h1) {
    for (int64_t h = h0; h < h1; ++h) {
      float* kt = kt_.data() + h * dh_ * n_pad_;
      float* v = v_.data() + h * n_pad_ * dh_;
      for (int64_t j = 0; j < n_; ++j) {
        const float* row = qkv + j * ld;
        for (int64_t d = 0; d < dh_; ++d) kt[d * n_pad_ + j] = row[C + h * dh_ + d];
        std::memcpy(v + j * dh_, row + 2 * C + h * dh_, size_t(dh_) * 4);
      }
    }
  });
  const int64_t n_qt = (n_ + kTq - 1) / kTq;
  pool.run(size_t(n_head_ * n_qt), [&](size_t t, int worker) {
    const int64_t h = int64_t(t) / n_qt, qt = int64_t(t) % n_qt;
    const int64_t q0 = qt * kTq, rows = std::min(kTq, n_ - q0);
    attend_tile(qkv + q0 * ld + h * dh_, ld, rows, kt_.data() + h * dh_ * n_pad_, v_.data() + h * n_pad_ * dh_, n_, n_pad_, dh_,
                out + q0 * ldo + h * dh_, ldo, scratch_.data() + worker * scratch_per_worker_);
  });
}

}  // namespace ckjit::vision
