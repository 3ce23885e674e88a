#pragma once
// A weight matrix of the decoder and the way it is multiplied. At load the weight is repacked once
// (losslessly) into the panel layout of the JIT kernels and the kernels it needs are generated:
// GEMM (M > 1, prefill), GEMV (M = 1, decode), each with a store or residual-add epilogue. Types
// without a JIT kernel on this CPU fall back to the scalar reference dot products of
// runtime/quants (llama.cpp's float order), multithreaded over output columns. describe() says
// which path a weight takes (the dtype report of `ckjit run -v`).
#include <cstdint>
#include <memory>
#include <string>

#include "graph/linear_plan.h"
#include "graph/workers.h"
#include "jit/code_cache.h"
#include "jit/packed_weights.h"
#include "runtime/gguf/gguf_reader.h"

namespace ckjit::graph {

struct LinearSetup {
  jit::IsaPath isa = jit::IsaPath::Avx512;
  bool allow_jit = true;   // false: reference path for every type (tests, --no-jit)
  // Decode (M = 1) in llama.cpp's float order where the JIT kernel's differs: Q6_K through the
  // AVX2 ggml_vec_dot_q6_K_q8_K order, and Gate-Up as two GEMVs + llama.cpp's swiglu instead of the
  // fused kernel. Q4_K JIT GEMV already has llama.cpp's (repacked gemv) order.
  bool llama_decode_order = true;
  // Also prefill (M > 1) in those orders: Q6_K rows one by one through the vec_dot order and
  // unfused Gate-Up, so a batched prompt gives llama.cpp's token-by-token numbers exactly
  // (slower prefill for Q6_K weights). Needs llama_decode_order.
  bool llama_prefill_order = false;
  int repack_threads = 1;
  // Register blocks, tile sizes and task split come from this planner's plans (prefill GEMM at
  // M = plan_rows, decode GEMV at M = 1, fused SwiGLU); nullptr: the fixed blocks of spec_for.
  LinearPlanner* planner = nullptr;
  int64_t plan_rows = 512;
  bool plan_swiglu = false;  // this weight is a Gate-Up pair's gate: also plan the fused SwiGLU
};

class Linear {
 public:
  Linear(const gguf::TensorInfo& t, const LinearSetup& setup);

  int64_t n() const { return n_; }              // output columns (weight rows)
  int64_t k() const { return k_; }              // reduction length
  TensorType wtype() const { return wtype_; }
  TensorType act_type() const { return atype_; }  // Q8_K for K-quants, Q8_0 for Q8_0
  int64_t act_row_bytes() const;                 // bytes of one quantized activation row of k
  bool uses_jit() const { return packed_ != nullptr; }
  jit::IsaPath isa() const { return isa_; }
  std::string describe() const;

  // y[r][0..n) = W · x_r (+ residual[r]) for r < m; xq holds m quantized rows (act_row_bytes apart),
  // y and residual rows are ldy floats apart. residual may not alias y.
  void matmul(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual = nullptr) const;

  // y = silu(gate · x) ⊙ (up · x): the fused Gate-Up SwiGLU kernel when both weights have one,
  // otherwise two matmuls and the scalar silu twin; scratch (m·n floats) is used only then.
  // scratch: m·n floats (used by the unfused paths).
  // xq_up: the same rows quantized for up's activation type (may equal xq_gate).
  static void swiglu(Workers& pool, const Linear& gate, const Linear& up, const void* xq_gate, const void* xq_up,
                     int64_t m, float* y, int64_t ldy, float* scratch);
  // Whether decode (M = 1) runs gate and up unfused with llama.cpp's swiglu.
  static bool llama_swiglu_decode(const Linear& gate, const Linear& up);
  static bool fused_swiglu(const Linear& gate, const Linear& up);

 private:
  // A plan's kernels (store and residual-add epilogues, or the SwiGLU one) and its tiling.
  struct Planned {
    const jit::JitKernel *store = nullptr, *residual = nullptr;
    Tiling tiling;
    explicit operator bool() const { return store != nullptr; }
  };
  Planned planned(LinearPlanner& p, const OpShape& shape) const;
  struct Kernels {
    const jit::JitKernel *gemm = nullptr, *gemv = nullptr, *gemm_res = nullptr, *gemv_res = nullptr;
    const jit::JitKernel *swiglu = nullptr, *swiglu_v = nullptr;
  };
  bool exact_decode_dot() const;
  void exact_gemv(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual) const;
  void reference_matmul(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual) const;
  float reference_dot(int64_t row, const void* xrow) const;

  int64_t n_ = 0, k_ = 0;
  TensorType wtype_, atype_;
  jit::IsaPath isa_;
  bool llama_order_ = true;
  bool llama_prefill_ = false;
  std::string name_;
  const uint8_t* raw_ = nullptr;  // GGUF rows (reference path)
  int64_t raw_row_bytes_ = 0;
  std::unique_ptr<jit::PackedWeights> packed_;
  Kernels kern_;
  Planned plan_gemm_, plan_gemv_, plan_swiglu_m_, plan_swiglu_1_;
};

// Quantizes m rows of k floats (ldx floats apart) into the activation format `act` (Q8_K or Q8_0),
// rows act_row_bytes apart, exactly as llama.cpp's x86 build does (Q8_K: q8_k_native.h; Q8_0: the
// AVX2 quantize_row_q8_0).
void quantize_activations(Workers& pool, TensorType act, const float* x, int64_t ldx, int64_t m, int64_t k, void* xq);
int64_t act_row_bytes(TensorType act, int64_t k);

}  // namespace ckjit::graph
