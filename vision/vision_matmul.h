#pragma once
// A matrix of the vision tower and how it is multiplied: y = W x + b (+ r). Each matrix chooses
// its implementation once at load (vision/matmul_mode.h) and the encoder calls it through this
// interface without knowing which one runs:
//   DenseLinear  float weights in f32 FMA panels (one FMA chain per output over K);
//   Int8Linear   Q8_0 weights times Q8_0 activation rows: exact int32 block sums, llama.cpp's CPU
//                arithmetic for a Q8_0 matrix.
// Both give the same bits on every ISA path and thread count.
#include <cstdint>
#include <string>

#include "runtime/op_profile.h"
#include "topology/workers.h"

namespace ckjit::vision {

class VisionMatmul {
 public:
  virtual ~VisionMatmul() = default;
  virtual int64_t n() const = 0;  // output columns
  virtual int64_t k() const = 0;  // reduction length
  virtual const std::string& name() const = 0;
  virtual std::string describe() const = 0;
  // The MACs and packed-weight bytes of an m-row matmul (for the op profile).
  virtual OpWork work(int64_t m) const = 0;
  // What matmul() and prepare() run, for the per-call report; built at load.
  virtual const OpDesc* op_desc() const = 0;
  virtual const OpDesc* prepare_desc() const = 0;
  // The bytes of packed weights this matrix keeps.
  virtual double packed_bytes() const = 0;
  // Prepares m input rows (x rows ldx floats apart) into xr, scratch of at least m * k floats, in
  // the form matmul() reads (rounded floats, or quantized blocks).
  virtual void prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, float* xr) const = 0;
  // y[r] = W xr[r] + b (+ residual[r]); y rows ldy floats apart, residual rows ldr apart; residual
  // may not alias y.
  virtual void matmul(Workers& pool, const float* xr, int64_t m, float* y, int64_t ldy, const float* residual = nullptr,
                      int64_t ldr = 0) const = 0;
};

}  // namespace ckjit::vision
