// The AVX-512 copies of layer_ops' kernels (layer_ops_kernels.h); chosen where the load's Isa has
// AVX512F (attention) or AVX512F + DQ (swiglu): jit/hand_kernels.cpp.
#include <immintrin.h>

#include <cmath>

#include "graph/attention_row.h"
#include "graph/layer_ops_kernels.h"
#include "runtime/gcc12_avx512_warnings.h"
#include "runtime/quants/f16_rows.h"

namespace ckjit::graph::kernels {
namespace {

CKJIT_AVX512_INTRINSICS_BEGIN
__attribute__((target("avx512f,f16c,fma"))) inline __m512 load_h16(const uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
__attribute__((target("avx512f,f16c,fma"))) inline void store_h16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
}

struct Avx512 {
  __attribute__((target("f16c"))) static float h2f(uint16_t h) { return _cvtsh_ss(h); }
  __attribute__((target("f16c"))) static uint16_t f2h(float f) { return uint16_t(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT)); }
  static void to_f16(const float* x, uint16_t* y, int64_t n) { quant::f32_to_f16_rows_avx2(x, y, n); }

  __attribute__((target("avx512f,f16c,fma"))) static float dot(const uint16_t* x, const float* y, int64_t n) {
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
    return float(row::dot_tail<Avx512>(x, y, np, n, double(_mm512_reduce_add_ps(s0))));
  }

  __attribute__((target("avx512f,f16c,fma"))) static void scale(uint16_t* y, int64_t n, float v) {
    const int64_t np = n & ~int64_t(63);
    const __m512 vv = _mm512_set1_ps(v);
    for (int64_t i = 0; i < np; i += 16) store_h16(y + i, _mm512_mul_ps(load_h16(y + i), vv));
    row::scale_tail<Avx512>(y, np, n, v);
  }

  __attribute__((target("avx512f,f16c,fma"))) static void mad(uint16_t* y, const uint16_t* x, int64_t n, float v) {
    const int64_t np = n & ~int64_t(63);
    const __m512 vv = _mm512_set1_ps(v);
    for (int64_t i = 0; i < np; i += 16) store_h16(y + i, _mm512_fmadd_ps(load_h16(x + i), vv, load_h16(y + i)));
    row::mad_tail<Avx512>(y, x, np, n, v);
  }
};

// ---- llama.cpp's swiglu (ggml_vec_swiglu_f32 with ggml_v_expf, AVX-512) ----
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
CKJIT_AVX512_INTRINSICS_END

}  // namespace

void attention_row_avx512(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* k, const uint16_t* v,
                          int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores) {
  row::attention_row<Avx512>(s, q, n_keys, k, v, kv_width, out, qh, acc, scores);
}

CKJIT_AVX512_INTRINSICS_BEGIN
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

}  // namespace ckjit::graph::kernels
