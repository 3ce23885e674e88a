#pragma once
// Interleaved M-RoPE ("imrope", spec/qwen3vl.md A.4). Each row has a 4-component position
// (t, h, w, e); pair k (k < head_dim / 2) rotates elements (k, k + head_dim/2) ("NeoX" style) by
// the angle of the component it reads (llama.cpp ggml_mrope_cache_init): h if k%3==1 && k<3*s1,
// w if k%3==2 && k<3*s2, t if k%3==0 && k<3*s0, else e; pairs k >= s0+s1+s2+s3 use the sector k mod
// that sum. Angles are formed like llama.cpp: theta starts at float(position component) and is
// multiplied by powf(base, -2/head_dim) once per pair, all four components in lock-step.
// cos/sin: by default computed in double and rounded once to float, so they do not depend on the
// libm's float sinf/cosf (which may differ in the last bit between libm versions); Libm uses
// sinf/cosf as llama.cpp does (--llama-order).
#include <cstdint>
#include <vector>

#include "graph/batch.h"
#include "topology/isa.h"

namespace ckjit::graph {

enum class RopeAngles { Portable, Libm };

class Rope {
 public:
  // isa: the load's, for the copy of the rotation apply() runs (jit::hand_isa, HandOp::rope_rows).
  Rope(int64_t head_dim, float base, const int32_t sections[4], const topo::Isa& isa,
       RopeAngles angles = RopeAngles::Portable);
  // cos/sin of every pair for this position (head_dim/2 each).
  void angles(const Position& pos, float* cos_out, float* sin_out) const;
  // Rotates n_heads vectors of head_dim in place with the given cos/sin.
  void apply(float* x, int64_t n_heads, const float* cos_v, const float* sin_v) const;
  int64_t head_dim() const { return head_dim_; }

 private:
  int64_t head_dim_;
  float theta_scale_;
  int32_t sec_[4];
  RopeAngles mode_;
  std::vector<int8_t> component_;  // per pair: 0 t, 1 h, 2 w, 3 e
  void (*rotate_)(float* x, int64_t n_heads, int64_t head_dim, const float* cos_v, const float* sin_v);
};

}  // namespace ckjit::graph
