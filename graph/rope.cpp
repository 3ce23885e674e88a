#include "graph/rope.h"

#include <algorithm>
#include <cmath>

#include "graph/rope_rotate.h"
#include "jit/hand_kernels.h"
#include "runtime/error.h"

namespace ckjit::graph {

namespace {
using RotateFn = void (*)(float*, int64_t, int64_t, const float*, const float*);
constexpr jit::HandCopy<RotateFn> kRotate[] = {
    {jit::HandIsa::avx2, rotate_heads_avx2},
    {jit::HandIsa::portable, rotate_heads_portable},
};
static_assert(jit::lists_the_copies(kRotate, jit::HandOp::rope_rows));
}  // namespace

Rope::Rope(int64_t head_dim, float base, const int32_t sections[4], const topo::Isa& isa, RopeAngles angles)
    : head_dim_(head_dim), mode_(angles), rotate_(jit::pick(kRotate, jit::HandOp::rope_rows, isa).fns) {
  theta_scale_ = std::pow(base, -2.0f / float(head_dim));
  std::copy(sections, sections + 4, sec_);
  const int64_t sect_dims = int64_t(sec_[0]) + sec_[1] + sec_[2] + sec_[3];
  if (sect_dims <= 0) throw Error("rope: empty M-RoPE sections");
  component_.resize(size_t(head_dim / 2));
  for (int64_t k = 0; k < head_dim / 2; ++k) {
    const int64_t sector = k % sect_dims;
    int8_t c = 3;
    if (sector % 3 == 1 && sector < 3 * sec_[1]) c = 1;
    else if (sector % 3 == 2 && sector < 3 * sec_[2]) c = 2;
    else if (sector % 3 == 0 && sector < 3 * sec_[0]) c = 0;
    component_[size_t(k)] = c;
  }
}

void Rope::angles(const Position& pos, float* cos_out, float* sin_out) const {
  float theta[4] = {float(pos.t), float(pos.h), float(pos.w), float(pos.e)};
  for (int64_t k = 0; k < head_dim_ / 2; ++k) {
    const float th = theta[component_[size_t(k)]];
    if (mode_ == RopeAngles::Libm) {
      cos_out[k] = std::cos(th);
      sin_out[k] = std::sin(th);
    } else {
      cos_out[k] = float(std::cos(double(th)));
      sin_out[k] = float(std::sin(double(th)));
    }
    for (float& t : theta) t *= theta_scale_;
  }
}

void rotate_heads_portable(float* x, int64_t n_heads, int64_t head_dim, const float* cos_v, const float* sin_v) {
  rotate_heads(x, n_heads, head_dim, cos_v, sin_v);
}

void Rope::apply(float* x, int64_t n_heads, const float* cos_v, const float* sin_v) const {
  rotate_(x, n_heads, head_dim_, cos_v, sin_v);
}

}  // namespace ckjit::graph
