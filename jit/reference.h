#pragma once
// Scalar twins of the generated kernels: same arguments, same packed layouts, same integer sums and
// the same float order (documented in each emitter), so results must match bit for bit.
#include "jit/kernel_args.h"
#include "jit/kernel_spec.h"

namespace ckjit::jit {

void reference_kernel(const KernelSpec& spec, const GemmArgs* args);
// op=dense: the mr x (nr * 8) tile of the kernel's float order (jit/x86/dense_emitter.cpp).
void reference_dense(const KernelSpec& spec, const GemmArgs* args);

// Integer partial sums of one (activation row, weight row, super-block), read from the packed
// layout: S = Σ_s sc_s·dot32(q_s, r_s), M = Σ_s mn_s·(bsums[2s]+bsums[2s+1]).
struct Q4KPartials { int32_t S, M; };
Q4KPartials q4k_partials(const uint8_t* panel_block, int row_in_panel, int panel, const void* q8k_block);

// One weight row (row l of a panel of P rows) times one activation row over nb blocks, in the
// kernel's documented float order.
float ref_dot_q4k(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb);
float ref_dot_q5k(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb);
float ref_dot_q6k(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb);
float ref_dot_q80(const uint8_t* panel, int P, int l, const uint8_t* xrow, int nb);

// silu(g)*u in the order of silu_constants.h.
float silu_mul_ref(float g, float u);

}  // namespace ckjit::jit
