#pragma once
// AVX2 versions of the llama.cpp-order dot products whose scalar twins are in quants.h, for the
// decode path where ckjit must reproduce llama.cpp's float order exactly (Q6_K has no repacked
// kernel on x86: llama.cpp multiplies it with ggml_vec_dot_q6_K_q8_K for every row, spec/quants.md
// §8.4). Bit-identical to quant::vec_dot_q6_K_q8_K (tested). Need AVX2 + FMA + F16C, ckjit's floor
// (runtime/ does not detect the CPU: jit::runtime_isa() is the one place that does).
#include <cstdint>

#include "runtime/quants/quants.h"

namespace ckjit::quant {

float vec_dot_q6_K_q8_K_avx2(const BlockQ6_K* x, const BlockQ8_K* y, int64_t n);
// §8.7: acc[L] = fma(f16(dx)·f16(dy), float(Σ_{t<4} x[4L+t]·y[4L+t]), acc[L]) per block, hsum8.
float vec_dot_q8_0_q8_0_avx2(const BlockQ8_0* x, const BlockQ8_0* y, int64_t n);

}  // namespace ckjit::quant
