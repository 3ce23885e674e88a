#pragma once
// llama.cpp's CPU flash-attention row (ggml ops.cpp flash_attn_ext_f16_one_chunk, AVX-512), written
// once over its per-ISA pieces so every copy of it runs the same softmax (one std::exp, one order).
// Per query row and head: Q rounded to f16; s = vec_dot_f16(k, q) (4 x 16-lane f32 FMA accumulators
// over 64-element steps, reduced (a0+a2)+(a1+a3) then GCC's zmm reduce-add tree, tail in double) * scale;
// online softmax with the weighted V sum kept in an f16 buffer: on a new maximum the buffer is
// scaled by expf(Mold - M) (rounded to f16), then buffer = f16(fma(v, vs, buffer)); S = S*ms + vs;
// finally out = f32(buffer) * (1/S).
// K, the copy's pieces (layer_ops_avx512.cpp, _avx2.cpp, _portable.cpp), has static functions:
// h2f / f2h (one half <-> float), to_f16 (a row), dot(x f16, y f32, n), scale(y f16, n, v) and
// mad(y f16, x f16, n, v) over the whole 64-element steps and the tails below for the rest.
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "graph/layer_ops.h"

namespace ckjit::graph::row {

// ggml's scalar tails: products in float, dot sum in double; mad fused as GCC contracts it.
// y: the f16 query widened to f32 once per row (exact), so the dot converts only the keys.
template <class K>
double dot_tail(const uint16_t* x, const float* y, int64_t i, int64_t n, double sumf) {
  for (; i < n; ++i) sumf += double(K::h2f(x[i]) * y[i]);
  return sumf;
}
template <class K>
void scale_tail(uint16_t* y, int64_t i, int64_t n, float v) {
  for (; i < n; ++i) y[i] = K::f2h(K::h2f(y[i]) * v);
}
template <class K>
void mad_tail(uint16_t* y, const uint16_t* x, int64_t i, int64_t n, float v) {
  for (; i < n; ++i) y[i] = K::f2h(std::fma(K::h2f(x[i]), v, K::h2f(y[i])));
}

template <class K>
void attention_row(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* kb, const uint16_t* vb,
                   int64_t kv_width, float* out, uint16_t* qh, uint16_t* acc, float* scores) {
  const int64_t D = s.head_dim;
  K::to_f16(q, qh, D);
  float qf[kMaxHeadDim];
  for (int64_t d = 0; d < D; ++d) qf[d] = K::h2f(qh[d]);
  // Every score first: the dots are independent, so they overlap in the core instead of waiting on
  // the softmax chain of the previous key (the same products and sums, so the same bits).
  for (int64_t j = 0; j < n_keys; ++j) scores[j] = K::dot(kb + j * kv_width, qf, D) * s.scale;
  std::fill(acc, acc + D, uint16_t(0));
  float S = 0.0f, M = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float sc = scores[j];
    const float Mold = M;
    float ms = 1.0f, vs = 1.0f;
    if (sc > M) {
      M = sc;
      ms = std::exp(Mold - M);
      K::scale(acc, D, ms);
    } else {
      vs = std::exp(sc - M);
    }
    K::mad(acc, vb + j * kv_width, D, vs);
    S = std::fma(S, ms, vs);
  }
  const float inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int64_t d = 0; d < D; ++d) out[d] = K::h2f(acc[d]) * inv;
}

}  // namespace ckjit::graph::row
