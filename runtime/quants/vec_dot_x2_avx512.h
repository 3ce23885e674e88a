#pragma once
// llama.cpp's AVX2 vec_dot_q6_K_q8_K order for two weight rows at once: each 256-bit half of the
// zmm registers does exactly what vec_dot_q6_K_q8_K_avx2 does for its row (the same element-wise
// integer and FMA operations, the same final reduction), so out[i] is bit-identical to
// vec_dot_q6_K_q8_K_avx2(x_i, y, n) with half the instructions per row. Decode's llama-order
// Q6_K GEMV (the tied output matrix above all) runs on it.
#include <cstdint>

#include "runtime/quants/quants.h"

namespace ckjit::quant {

// Needs AVX512F + BW + DQ + VL and F16C; the caller checks (runtime/ does not detect the CPU).
// Both rows hold n/256 blocks; y is one Q8_K row of n elements.
void vec_dot_q6_K_q8_K_x2_avx512(const BlockQ6_K* x0, const BlockQ6_K* x1, const BlockQ8_K* y, int64_t n,
                                 float out[2]);

// The same for `rows` activation rows y[0..rows) against the same two weight rows: each weight block
// is unpacked once for all of them; out[2j], out[2j+1] are bit-identical to the call above for
// y[j] (each row keeps its own sums in the same order). Batched decode runs its Q6_K rows on it.
void vec_dot_q6_K_q8_K_x2_rows_avx512(const BlockQ6_K* x0, const BlockQ6_K* x1, const BlockQ8_K* const* y, int rows,
                                      int64_t n, float* out);

// The same results (each row bit-identical to the call above) with AVX-512 VNNI: the weights are
// unpacked once per block into int16 and each activation row costs one vpdpwssd per 32 products
// instead of three instructions; for two or more rows (batched decode's tied output matrix).
void vec_dot_q6_K_q8_K_x2_rows_vnni512(const BlockQ6_K* x0, const BlockQ6_K* x1, const BlockQ8_K* const* y, int rows,
                                       int64_t n, float* out);

}  // namespace ckjit::quant
