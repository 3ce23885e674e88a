#pragma once
// A vision matrix multiplied with AMX-BF16 tiles (--vision-precision bf16 where AMX-BF16 is
// granted): the weight (F16, BF16, F32 or Q8_0) rounded to BF16 once at load and packed into B tiles
// (jit/amx_bf16_layout.h); the input rows rounded to BF16 (vcvtneps2bf16, nearest even) by
// prepare(); 32 x 32 output blocks by the AMX op=dense kernel, then + bias (+ residual).
// Float order: tdpbf16ps's own (unspecified by Intel; see jit/x86/amx_bf16_emitter.cpp), then + b,
// then + r. Each output depends only on its row and column, never on threads or tiling, so the
// result is the same for any thread count on one CPU; another CPU (or the FMA fallback of the bf16
// mode, DenseLinear over the same bf16 values) agrees within bf16 rounding, not bit for bit.
#include <cstdint>
#include <string>
#include <vector>

#include "jit/code_cache.h"
#include "jit/packed_weights.h"
#include "runtime/aligned_allocator.h"
#include "runtime/gguf/gguf_reader.h"
#include "topology/isa.h"
#include "vision/vision_matmul.h"

namespace ckjit::vision {

class AmxBf16Linear final : public VisionMatmul {
 public:
  // Whether a matrix can run here: k a multiple of 32 and the AMX-BF16 kernel runnable on isa.
  static bool runs(const gguf::TensorInfo& w, const topo::Isa& isa);
  // w: [k, n], F16 / BF16 / F32 / Q8_0; bias: [n] F32. Error when !runs() or for bad shapes.
  AmxBf16Linear(const gguf::TensorInfo& w, const gguf::TensorInfo& bias, const topo::Isa& isa, int threads);

  int64_t n() const override { return n_; }
  int64_t k() const override { return k_; }
  const std::string& name() const override { return name_; }
  std::string describe() const override;
  OpWork work(int64_t m) const override { return {double(m) * double(n_) * double(k_), double(n_) * double(k_) * 2.0}; }
  const OpDesc* op_desc() const override { return &desc_; }
  const OpDesc* prepare_desc() const override { return &prepare_desc_; }
  double packed_bytes() const override { return double(layout_bytes_); }
  // xr receives m dense rows of k bf16 (half of the m * k floats it has).
  void prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, float* xr) const override;
  void matmul(Workers& pool, const float* xr, int64_t m, float* y, int64_t ldy, const float* residual = nullptr,
              int64_t ldr = 0) const override;

 private:
  std::string name_;
  int64_t n_ = 0, k_ = 0, layout_bytes_ = 0;
  TensorType file_type_ = TensorType::F16;
  std::vector<float> bias_;
  std::unique_ptr<uint8_t, jit::FreeDeleter> w_;
  const jit::JitKernel* kernel_ = nullptr;
  OpDesc desc_, prepare_desc_;
};

}  // namespace ckjit::vision
