#pragma once
// A vision matrix multiplied in int8: Q8_0 weights times Q8_0 activation rows, as llama.cpp's CPU
// backend multiplies a Q8_0 mmproj (activations quantized per row by quantize_row_q8_0, int32 sums
// per 32-element block, scaled by both block scales). A Q8_0 tensor keeps its own blocks; a float
// tensor is quantized to Q8_0 at load (llama.cpp's reference quantizer, as llama-quantize writes
// Q8_0) when the int8 mode asks for it. The kernels are the decoder's Q8_0 GEMM kernels (AMX,
// AVX-512, AVX-VNNI, AVX2: the same bits on each, jit/reference_q80.cpp), the first that runs here.
// Float order: y = (sum over blocks in K order of fma(float(isum), dw*dx, acc) + b) (+ r): the bias
// is the kernel's residual-add epilogue over one broadcast row, the residual a pass after it.
#include <cstdint>
#include <memory>
#include <string>

#include "jit/code_cache.h"
#include "jit/packed_weights.h"
#include "runtime/gguf/gguf_reader.h"
#include "topology/isa.h"
#include "vision/vision_matmul.h"

namespace ckjit::vision {

class Int8Linear final : public VisionMatmul {
 public:
  // w: [k, n] (ne[0] = k contiguous), Q8_0 or a float type; bias: [n] F32. Error for other types,
  // for k not a multiple of 32 (supports()), or when no Q8_0 kernel runs on isa.
  Int8Linear(const gguf::TensorInfo& w, const gguf::TensorInfo& bias, const topo::Isa& isa, int threads);
  // Whether a tensor can be multiplied in int8 (Q8_0 blocks need k a multiple of 32).
  static bool supports(const gguf::TensorInfo& w);
  // Packed bytes of an n x k matrix (Q8_0 panels).
  static double packed_bytes_for(int64_t n, int64_t k);

  int64_t n() const override { return n_; }
  int64_t k() const override { return k_; }
  const std::string& name() const override { return name_; }
  std::string describe() const override;
  OpWork work(int64_t m) const override { return {double(m) * double(n_) * double(k_), packed_bytes()}; }
  const OpDesc* op_desc() const override { return &desc_; }
  const OpDesc* prepare_desc() const override { return &prepare_desc_; }
  double packed_bytes() const override { return double(w_.bytes()); }
  // xr receives m rows of k/32 Q8_0 blocks (34 bytes each; fits in m * k floats).
  void prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, float* xr) const override;
  void matmul(Workers& pool, const float* xr, int64_t m, float* y, int64_t ldy, const float* residual = nullptr,
              int64_t ldr = 0) const override;

 private:
  int64_t row_bytes() const;
  std::string name_;
  int64_t n_ = 0, k_ = 0;
  TensorType file_type_ = TensorType::Q8_0;
  std::vector<float> bias_;
  jit::PackedWeights w_;
  const jit::JitKernel* kernel_ = nullptr;    // GEMM, residual-add epilogue (the bias row)
  const jit::JitKernel* quantize_ = nullptr;  // f32 rows -> Q8_0 (the bytes of quantize_row_q8_0_x86)
  OpDesc desc_, prepare_desc_;
};

}  // namespace ckjit::vision
