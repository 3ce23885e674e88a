#include "graph/rope.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"

namespace ckjit::graph {

Rope::Rope(int64_t head_dim, float base, const int32_t sections[4], RopeAngles angles)
    : head_dim_(head_dim), mode_(angles) {
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

// FMA enabled so that std::fma is the instruction, not a libm call per element (same result: one
// rounding either way; -ffp-contract=off keeps every other product rounded).
__attribute__((target("avx2,fma"))) void Rope::apply(float* x, int64_t n_heads, const float* cos_v, const float* sin_v) const {
  const int64_t half = head_dim_ / 2;
  for (int64_t h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim_;
    for (int64_t k = 0; k < half; ++k) {
      const float x0 = v[k], x1 = v[k + half];
      // As GCC contracts llama.cpp's rotate_pairs (x0*c - x1*s, x0*s + x1*c): the second product is
      // rounded, the first fused (matched against peer-cli: the other choice flips f16 K values).
      v[k] = std::fma(x0, cos_v[k], -(x1 * sin_v[k]));
      v[k + half] = std::fma(x0, sin_v[k], x1 * cos_v[k]);
    }
  }
}

}  // namespace ckjit::graph
