#pragma once
// A weight matrix of the decoder and the way it is multiplied. At load the weight is repacked once
// (losslessly) into the panel layout of the JIT kernels, and for each class of row counts (one
// row, 2..16, more) the matmul primitive (jit/matmul_primitive.h) says what runs: llama.cpp's
// vec_dot order for Q6_K / Q8_0 rows where the float order asks for it, the scalar reference, or
// the generated kernels of the first ISA path of the load's target that serves the op. Linear asks
// the planner for its plans, runs what the primitive chose and names it in the reports; it
// chooses nothing itself. Every JIT path has the float order of the scalar twins, so the choice
// never changes a result.
// The linear prepares its own input: prepare() quantizes float rows to its activation type.
#include <cstdint>
#include <memory>
#include <string>

#include "graph/layer_ops.h"
#include "graph/linear_plan.h"
#include "topology/workers.h"
#include "jit/code_cache.h"
#include "jit/hand_kernels.h"
#include "jit/matmul_primitive.h"
#include "jit/packed_weights.h"
#include "runtime/op_profile.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/quants/quants.h"
#include "topology/isa.h"

namespace ckjit::graph {

// Decode's llama.cpp-order dots (vec_dot_q6_K_q8_K, vec_dot_q8_0_q8_0) of one weight row, and of
// two Q6_K rows per zmm (null in the copies without them: one row at a time then).
struct DecodeDots {
  const char* q6k_name;  // for describe(): how the Q6_K rows are dotted
  const char* q80_name;  // ... and the Q8_0 rows
  float (*q6k)(const quant::BlockQ6_K* x, const quant::BlockQ8_K* y, int64_t n);
  float (*q80)(const quant::BlockQ8_0* x, const quant::BlockQ8_0* y, int64_t n);
  void (*q6k_x2)(const quant::BlockQ6_K* x0, const quant::BlockQ6_K* x1, const quant::BlockQ8_K* y, int64_t n, float out[2]);
  void (*q6k_x2_rows)(const quant::BlockQ6_K* x0, const quant::BlockQ6_K* x1, const quant::BlockQ8_K* const* y, int rows,
                      int64_t n, float* out);
};
// The Q8_K activation quantizer (q8_k_native.h).
struct QuantizeQ8K {
  const char* name;
  void (*row)(const float* x, quant::BlockQ8_K* y, int64_t n);
};

// How the rows of one call are computed: as one batch (M > 1 runs the GEMM kernels), or each as
// the decode step of its own sequence: the arithmetic of M = 1 for every row (llama.cpp's vec_dot
// order for Q6_K / Q8_0 where decode follows it), so that a sequence's decode row gives the same
// bits alone or beside others (graph/batched_decode.h). The JIT GEMM and GEMV kernels share their
// twin's order, so for the other types the GEMM kernels serve decode rows as they are.
enum class Rows { batch, decode };

struct LinearSetup {
  topo::Isa isa;            // what this process may run (jit::runtime_isa(): CPU capped by CKJIT_MAX_ISA)
  bool allow_jit = true;    // false: scalar reference for every weight (tests, --no-jit)
  // Decode (M = 1) in llama.cpp's float order where the JIT kernel's differs: Q6_K and Q8_0 through
  // the AVX2 ggml_vec_dot orders (Q4_K JIT GEMV already has llama.cpp's repacked-gemv order).
  bool llama_decode_order = true;
  // Also prefill (M > 1) in those orders, Gate-Up as two matmuls + llama.cpp's swiglu instead of the
  // fused kernel (prefill and decode), and Q5_K through llama.cpp's vec_dot_q5_K order everywhere: a batched prompt then gives llama.cpp's token-by-token numbers exactly (slower
  // prefill; Q5_K weights slow throughout). Needs llama_decode_order. This is --llama-order.
  bool llama_prefill_order = false;
  int repack_threads = 1;
  // Register blocks, tile sizes and task split come from this planner's plans (prefill GEMM at
  // M = plan_rows, decode GEMV at M = 1, fused SwiGLU); nullptr: the primitive's fixed blocks.
  LinearPlanner* planner = nullptr;
  int64_t plan_rows = 512;
  bool plan_swiglu = false;  // this weight is a Gate-Up pair's gate: also plan the fused SwiGLU
  // Mostly one row per call (the LM head: one row per batch unless every row's logits are asked
  // for): where decode runs llama.cpp's vec_dot order from the GGUF rows (Q6_K, Q8_0), every row
  // does, and the weight is not repacked — the packed copy would double it in memory for a rare
  // multi-row call (340 MB for a 2B model's tied Q6_K output).
  bool rows_mostly_one = false;
};

class Linear {
 public:
  Linear(const gguf::TensorInfo& t, const LinearSetup& setup);

  int64_t n() const { return n_; }              // output columns (weight rows)
  int64_t k() const { return k_; }              // reduction length
  TensorType wtype() const { return wtype_; }
  TensorType act_type() const { return atype_; }  // Q8_K for K-quants, Q8_0 for Q8_0
  int64_t act_row_bytes() const;                 // bytes of one quantized activation row of k
  // Whether any op of this weight runs the scalar reference (only with allow_jit = false, or Q5_K
  // under llama_prefill_order, whose llama.cpp order has no fast copy yet).
  bool uses_reference() const;
  std::string describe() const;
  // The MACs and weight bytes of an m-row matmul (for the op profile).
  OpWork work(int64_t m) const {
    return {double(m) * double(n_) * double(k_), double(n_) * double(row_bytes(tensor_type_info(wtype_), k_))};
  }

  // What this weight's op runs, for the per-call report (ckjit run --report): shape, types and
  // the kernel of M > 1 and M = 1; and what prepare() runs. Built at load; the timers keep pointers.
  const OpDesc* op_desc() const { return &desc_; }
  const OpDesc* prepare_desc() const { return &prepare_desc_; }
  // The copies of the hand-written kernels this weight runs, named as jit::hand_isa_name names them
  // ("avx512", "avx2", "portable"): chosen at construction for setup.isa (the load's, caps applied).
  const char* q8k_impl() const { return jit::hand_isa_name(q8k_isa_); }
  const char* decode_dots_impl() const { return jit::hand_isa_name(dots_isa_); }
  const char* swiglu_impl() const { return silu_.impl(); }
  // The Gate-Up pair as one op: the fused SwiGLU kernel, or the two matmuls and the silu.
  static OpDesc swiglu_desc(const Linear& gate, const Linear& up);

  // Quantizes m rows of x (k floats, ldx apart) into xq (m * act_row_bytes() bytes).
  void prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, void* xq) const;
  // y[r][0..n) = W · x_r (+ residual[r]) for r < m; xq holds m prepared rows (act_row_bytes apart),
  // y and residual rows are ldy floats apart. residual may not alias y.
  void matmul(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual = nullptr,
              Rows rows = Rows::batch) const;

  // y = silu(gate · x) ⊙ (up · x): the fused Gate-Up SwiGLU kernel when both weights have one,
  // otherwise two matmuls and the silu; scratch (m·n floats) is used only then.
  // xq_up: the same rows prepared for up's activation type (may equal xq_gate).
  static void swiglu(Workers& pool, const Linear& gate, const Linear& up, const void* xq_gate, const void* xq_up,
                     int64_t m, float* y, int64_t ldy, float* scratch, Rows rows = Rows::batch);
  // Whether decode (M = 1) runs gate and up unfused with llama.cpp's swiglu.
  static bool llama_swiglu_decode(const Linear& gate, const Linear& up);
  static bool fused_swiglu(const Linear& gate, const Linear& up);
  // Whether the prefill (M > 1) of this pair runs unfused.
  static bool unfused_prefill(const Linear& gate, const Linear& up);

 private:
  // One row class's answer of the matmul primitive (jit/matmul_primitive.h) and, when it runs the
  // plan's blocks, the plan's tiling and the M the plan was made for.
  struct Chosen {
    jit::MatmulChoice c;
    Tiling tiling;
    int64_t plan_rows = 0;
    bool runs(jit::MatmulImpl i) const { return c.impl == i; }
  };
  Chosen choose(jit::Op op, jit::RowClass rows, const LinearSetup& setup, const std::vector<jit::IsaPath>& paths,
                bool need_residual) const;
  jit::MatmulDesc desc(jit::Op op, jit::RowClass rows, const LinearSetup& setup) const;
  // What m rows run: the one place matmul(), swiglu() and the reports read.
  const Chosen& gemm_for(int64_t m) const { return m == 1 ? gemv_ : m <= jit::kFewRows ? gemm_few_ : gemm_; }
  const Chosen& swiglu_for(int64_t m) const { return m == 1 ? swiglu_1_ : m <= jit::kFewRows ? swiglu_few_ : swiglu_m_; }
  void setup_kernels(const gguf::TensorInfo& t, const LinearSetup& setup);
  std::string kernel_name(int64_t m) const;  // the kernel matmul() runs for m rows
  std::string dot_copy() const;   // the copy of llama.cpp's vec_dot order (its name)
  // Whether these rows run llama.cpp's vec_dot order: as their row class chose, and decode rows
  // of several sequences as one row does.
  bool vec_dot_rows(int64_t m, Rows rows = Rows::batch) const {
    return (rows == Rows::decode ? gemv_ : gemm_for(m)).runs(jit::MatmulImpl::llama_vec_dot);
  }
  void exact_gemv(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual) const;
  void reference_matmul(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual) const;
  float reference_dot(int64_t row, const void* xrow) const;
  void run_jit(Workers& pool, const Chosen& ks, const jit::MatmulOperands& op, int64_t m, bool residual) const;

  int64_t n_ = 0, k_ = 0;
  TensorType wtype_, atype_;
  bool llama_prefill_ = false;  // --llama-order (llama.cpp's swiglu in the Gate-Up pair)
  // The copies of runtime's hand-written kernels this Linear runs, chosen for setup.isa by
  // jit::hand_isa (linear.cpp: kDecodeDots, kQuantizeQ8K; the same bytes from each).
  const DecodeDots* dots_ = nullptr;  // decode's llama.cpp-order Q6_K / Q8_0 dots
  const QuantizeQ8K* q8k_ = nullptr;  // the Q8_K activation quantizer
  jit::HandIsa dots_isa_ = jit::HandIsa::portable, q8k_isa_ = jit::HandIsa::portable;  // which copies those are
  SwiGLU silu_;                // llama.cpp's swiglu order, chosen for setup.isa (gate of a pair)
  std::string name_;
  bool test_fault_ = false;  // CKJIT_TEST_FAULT names this weight (jit/executor.h; tests only)
  const uint8_t* raw_ = nullptr;  // GGUF rows (vec_dot and reference paths)
  int64_t raw_row_bytes_ = 0;
  float (*llama_dot_)(const void* w, const void* x, int64_t n) = nullptr;  // llama.cpp's row order (reference path)
  std::unique_ptr<jit::PackedWeights> packed_;
  // Per row class (one, 2..kFewRows, more): the matmul's and, for a Gate-Up pair's gate, the
  // fused SwiGLU's choice. A few-row class the primitive declines holds the many-row choice.
  Chosen gemm_, gemv_, swiglu_m_, swiglu_1_, gemm_few_, swiglu_few_;
  OpDesc desc_, prepare_desc_;
};

// Quantizes m rows of k floats (ldx floats apart) into the activation format `act` (Q8_K or Q8_0),
// rows act_row_bytes apart, exactly as llama.cpp's x86 build does (Q8_K: q8_k_native.h, through
// the copy q8k; Q8_0: the AVX2 quantize_row_q8_0's order, portable C++).
void quantize_activations(Workers& pool, TensorType act, const float* x, int64_t ldx, int64_t m, int64_t k, void* xq,
                          const QuantizeQ8K& q8k);
int64_t act_row_bytes(TensorType act, int64_t k);

}  // namespace ckjit::graph
