#pragma once
// The Q8_K activation quantizer as a native (-march=native) llama.cpp build actually runs it.
// quantize_row_q8_K_ref computes nearest_int(iscale * x) with nearest_int(f) = bits(f + 1.5*2^23);
// after inlining, GCC (default -ffp-contract=fast) fuses the product and the add into one FMA, so
// the quant is the exact product iscale*x rounded half-to-even, not the rounded product rounded
// again. The two differ when fl(iscale*x) lands on a half-integer the exact product is not on
// (about 1e-5 of the elements): one quant off by one, enough to move a random model's logits by
// 1e-4 in cosine when it happens in a K/V row. (Checked in peer-cli's disassembly: vfmadd132ps in
// quantize_row_q8_K_ref.) Everything else as §7.1 of spec/quants.md.
#include <cstdint>

#include "runtime/quants/quants.h"

namespace ckjit::quant {

// Two implementations with identical bytes; the caller picks (runtime/ does not detect the CPU).
// The AVX-512 one needs AVX512F + AVX512BW, the AVX2 one AVX2 + FMA.
void quantize_row_q8_K_fma_scalar(const float* x, BlockQ8_K* y, int64_t n);
void quantize_row_q8_K_fma_avx2(const float* x, BlockQ8_K* y, int64_t n);
void quantize_row_q8_K_fma_avx512(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace ckjit::quant
