#pragma once
// A plain C++ twin of the planned op that honours every field of a Tiling (threads, split axis,
// loop order, mc/nc/kc cache blocks, mr x nr register tiles), so the tuner can measure how the
// planner's choices behave before the JIT kernels exist. Quantized weight types run as
// u8 activations x s8 weights -> i32 (the VNNI contract without the unpacking); float types as f32.
// It measures this code, not the JIT kernels: the runner's name says so in every profile entry.
#include <cstdint>
#include <vector>

#include "jit/planner/op_runner.h"

namespace ckjit::planner {

// The op's data in the reference's layout: x[M][K], w[mats][N][K], y[M][N] (row-major).
struct ReferenceOperands {
  OpShape shape;
  bool integer = true;                 // u8 x s8 -> i32, else f32
  std::vector<uint8_t> x_u8;
  std::vector<int8_t> w_s8;
  std::vector<float> x_f32, w_f32;
  std::vector<int32_t> acc_i32;        // [mats][M][N] partial sums
  std::vector<float> acc_f32;
  std::vector<float> y;                // [M][N] result (gate_up: silu(g) * u)

  static ReferenceOperands make(const OpShape& s, uint32_t seed);
};

// y under `t` on `pool` (t.threads must equal pool.size()); throws ckjit::Error for a bad tiling.
void reference_blocked(ReferenceOperands& ops, const Tiling& t, ThreadPool& pool);
// y by the plain triple loop, k ascending (the summation order the blocked version keeps).
void reference_naive(ReferenceOperands& ops);

class ReferenceRunner : public OpRunner {
 public:
  explicit ReferenceRunner(double max_macs = 2e8) : max_macs_(max_macs) {}
  std::string name() const override;
  std::string cannot_run(const OpShape& shape) const override;
  void prepare(const OpShape& shape) override;
  void run(const Plan& plan, ThreadPool& pool) override;

 private:
  double max_macs_;
  ReferenceOperands ops_;
};

}  // namespace ckjit::planner
