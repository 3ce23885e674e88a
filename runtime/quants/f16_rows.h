#pragma once
// Rows of floats to f16 as the F16C instruction vcvtps2ph converts them (round to nearest even; a
// NaN stays a quiet NaN with its payload's top bits), for the f16 KV cache and the attention
// inputs of graph/ and vision/. Each comes as an AVX2 + F16C copy (f16_rows_avx2.cpp) and a
// portable twin (f16_rows.cpp) with the same bytes; the caller picks once at load
// (jit::hand_isa(HandOp::f16_rows, isa)): runtime/ does not detect the CPU.
#include <cstdint>

namespace ckjit::quant {

// y[i] = f16(x[i]), any n.
void f32_to_f16_rows(const float* x, uint16_t* y, int64_t n);
void f32_to_f16_rows_avx2(const float* x, uint16_t* y, int64_t n);

// y[i] = f32(f16(x[i])) (the widening is exact); y may alias x. The n % 8 elements after the last
// whole 8 go through f32_to_f16 (a NaN there comes out as f32_to_f16's canonical one).
void round_f16_rows(const float* x, float* y, int64_t n);
void round_f16_rows_avx2(const float* x, float* y, int64_t n);

// One float as vcvtps2ph converts it: f32_to_f16, except that a NaN keeps the top bits of its
// payload (f32_to_f16 gives the canonical quiet NaN).
uint16_t f32_to_f16_f16c(float x);

}  // namespace ckjit::quant
