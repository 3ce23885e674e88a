#pragma once
// A float-weight matrix of the vision tower and its matmul y = W x + b (+ residual). At load the
// weight (F16, BF16, F32, or Q8_0 dequantized losslessly to F32) is repacked once into panels of
// the load's widest op=dense path (16 columns on AVX-512, 8 on AVX2) and the kernels for its shape
// are emitted (every row/panel remainder, first/continuing K block, each epilogue); the run has no
// branches on type, shape or ISA.
// The input is prepared as llama.cpp's CPU backend does for the weight type (quants.md §8.8): rows
// rounded to F16 for F16 weights, to BF16 for BF16 weights, kept for F32 / Q8_0 (llama.cpp
// quantizes to Q8_0 there: a documented difference, measured in perf/RESULTS-vision.md).
// Float order: one FMA chain per output over K (jit/x86/dense_emitter.cpp): the result does not
// depend on the path, threads or tiling.
#include <cstdint>
#include <string>
#include <vector>

#include "topology/workers.h"
#include "jit/code_cache.h"
#include "jit/kernel_args.h"
#include "jit/kernels.h"
#include "jit/packed_weights.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/op_profile.h"
#include "topology/isa.h"
#include "vision/vision_matmul.h"

namespace ckjit::vision {

class DenseLinear final : public VisionMatmul {
 public:
  // w: [k, n] (ne order: ne[0] = k contiguous); bias: [n] F32. Error for other types or shapes.
  DenseLinear(const gguf::TensorInfo& w, const gguf::TensorInfo& bias, const topo::Isa& isa, int threads);
  // From f32 rows (n rows of k) already in memory, e.g. the sum of the two temporal patch kernels;
  // round_input: what llama.cpp rounds the input to (F16 for an F16 kernel, else F32 = none);
  // packed: F32 keeps the values, F16 / BF16 round them (benchmarks of the file types).
  DenseLinear(const std::vector<float>& w, int64_t n, int64_t k, std::vector<float> bias, TensorType round_input,
              const topo::Isa& isa, int threads, TensorType packed = TensorType::F32);

  // Names a matrix built from f32 rows after the tensor it came from (reports and profiles).
  void set_name(const std::string& name) { name_ = name; }

  int64_t n() const override { return n_; }
  int64_t k() const override { return k_; }
  TensorType input_type() const { return round_; }
  std::string describe() const override;
  // The MACs and packed-weight bytes of an m-row matmul (for the op profile).
  OpWork work(int64_t m) const override {
    return {double(m) * double(n_) * double(k_), double(n_) * double(k_) * (wtype_ == TensorType::F32 ? 4.0 : 2.0)};
  }

  const std::string& name() const override { return name_; }
  // What matmul() and prepare() run, for the per-call report (ckjit run --report); built at load.
  const OpDesc* op_desc() const override { return &desc_; }
  const OpDesc* prepare_desc() const override { return &prepare_desc_; }
  double packed_bytes() const override { return double(w_.bytes()); }
  // The copy of the load-time repack this matrix ran ("avx2" or "portable": jit::hand_isa,
  // HandOp::dense_panels, for the Isa it was built with; the same bytes from each).
  const char* repack_impl() const { return repack_impl_; }

  // xr[r][0..k) = x[r] rounded to input_type() (m rows, x rows ldx floats apart, xr dense).
  void prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, float* xr) const override;
  // y[r] = W xr[r] + b (+ residual[r]); xr dense m x k (from prepare), y rows ldy floats apart,
  // residual rows ldr apart; residual may not alias y (y holds partial sums while K blocks run).
  void matmul(Workers& pool, const float* xr, int64_t m, float* y, int64_t ldy, const float* residual = nullptr,
              int64_t ldr = 0) const override;

 private:
  void pack(const float* rows_f32, const uint16_t* rows_16, int threads);
  void build_kernels();
  void build_op_descs();
  static std::vector<jit::GemmFn> make_table(jit::IsaPath path, TensorType wtype, int64_t kc, int64_t k);
  static size_t table_index(int mr, int nr, bool acc, jit::Epilogue ep) {
    return ((size_t(mr - 1) * kMaxNr + size_t(nr - 1)) * 2 + acc) * 3 + size_t(ep_index(ep));
  }
  jit::GemmFn kernel(int mr, int nr, bool acc, jit::Epilogue ep) const { return fns_[table_index(mr, nr, acc, ep)]; }
  static int ep_index(jit::Epilogue ep) { return ep == jit::Epilogue::Store ? 0 : ep == jit::Epilogue::Bias ? 1 : 2; }
  void run_tile(int64_t r0, int64_t r1, int64_t g0, int64_t g1, const float* xr, float* y, int64_t ldy, const float* res,
                int64_t ldr) const;

  // Register blocks: avx2 4 x 3 (12 accumulators + 3 weights + 1 broadcast of 16 ymm), avx512
  // 8 x 3 (24 + 3 + 1 of 32 zmm). Row tiles of about 64 rows, a multiple of mr.
  static constexpr int kMaxMr = 8, kMaxNr = 4, kMaxRowTile = 66;
  void choose_path(const topo::Isa& isa);
  jit::IsaPath path_ = jit::IsaPath::Avx2;
  int panel_ = 8, mr_ = 4, nr_ = 3;
  int64_t row_tile_ = 64;
  std::string name_;
  int64_t n_ = 0, k_ = 0, kc_ = 0;
  TensorType wtype_ = TensorType::F16;  // packed type: F16, BF16 or F32
  TensorType round_ = TensorType::F16;  // input rounding
  void (*round_f16_)(const float* x, float* y, int64_t n) = nullptr;  // its f16 copy (choose_path)
  // The repack's copy (choose_path; vision/dense_linear_kernels.h) and its name.
  void (*pack_panel_)(const uint8_t* src, int es, int64_t n, int64_t k, int P, int64_t p, uint8_t* dst) = nullptr;
  const char* repack_impl_ = "";
  TensorType file_type_ = TensorType::F16;
  std::vector<float> bias_;             // n rounded up to a whole panel, zero-padded
  jit::PackedWeights w_;
  std::vector<jit::GemmFn> fns_;
  OpDesc desc_, prepare_desc_;
};

}  // namespace ckjit::vision
