#pragma once
// Linears that read the same input rows (Q/K/V of a layer, Gate/Up, or one weight alone) and the
// preparation of that input: the rows are quantized once per distinct activation type the group's
// kernels need (Q8_K, Q8_0), into scratch the session books at load (scratch_bytes). The group is
// the op that consumes the rows, so it prepares them; nothing is cached across ops.
#include <array>
#include <cstdint>
#include <initializer_list>

#include "graph/linear.h"

namespace ckjit::graph {

class LinearGroup {
 public:
  static constexpr int kMax = 3;
  LinearGroup() = default;
  LinearGroup(std::initializer_list<const Linear*> members);

  // Bytes of scratch prepare() needs for m rows.
  int64_t scratch_bytes(int64_t m) const;
  // Quantizes m rows of x (k floats, ldx apart; k = every member's k) for every member.
  void prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, void* scratch);
  // Member i's prepared rows (valid until the next prepare).
  const void* input(int i) const { return input_[size_t(i)]; }
  const Linear& member(int i) const { return *lin_[size_t(i)]; }
  int size() const { return n_; }

 private:
  int n_ = 0;
  std::array<const Linear*, kMax> lin_{};
  std::array<const void*, kMax> input_{};
};

}  // namespace ckjit::graph
