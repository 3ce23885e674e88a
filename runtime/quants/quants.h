#pragma once
// Quant formats bit-exact with llama.cpp (../shared/spec/quants.md): block layouts, scalar
// dequantizers, reference quantizers, and reference dot products that follow the float order of
// a named llama.cpp x86 kernel. This header is the contract between runtime/ and jit/: the JIT
// kernels are tested against these functions.
#include <cstdint>

#include "runtime/tensor_type.h"

namespace ckjit::quant {

constexpr int QK_K = 256;  // super-block size of all K-quants
constexpr int QK8_0 = 32;

#pragma pack(push, 1)
struct BlockQ8_0 { uint16_t d; int8_t qs[32]; };
struct BlockQ4_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qs[128]; };
struct BlockQ5_K { uint16_t d, dmin; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint16_t d; };
struct BlockQ8_K { float d; int8_t qs[256]; int16_t bsums[16]; };
#pragma pack(pop)
static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_K) == 144 && sizeof(BlockQ5_K) == 176 &&
              sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Scalar conversions (quants.md §0): exact widening, round-to-nearest-even narrowing.
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t b);
uint16_t f32_to_bf16(float f);

// The 6-bit scales and mins of a Q4_K/Q5_K super-block (§4.2).
void unpack_k4_scales(const uint8_t packed[12], uint8_t sc[8], uint8_t mn[8]);

// Rows of n elements, n a multiple of the type's block size.
// dequantize_row: F32, F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K, Q8_K. Throws ckjit::Error otherwise.
void dequantize_row(TensorType type, const void* src, float* dst, int64_t n);
// quantize_row: llama.cpp's reference quantizers for weights (F32, F16, BF16, Q8_0 ref, Q4_K, Q5_K,
// Q6_K) — what ggml_quantize_chunk does without an importance matrix.
void quantize_row(TensorType type, const float* src, void* dst, int64_t n);

// Activation quantizers llama.cpp runs on x86.
void quantize_row_q8_K(const float* x, BlockQ8_K* y, int64_t n);     // §7.1 (reference == x86)
void quantize_row_q8_0_x86(const float* x, BlockQ8_0* y, int64_t n);  // §3.1 x86 AVX2 variant

// Dot products of one weight row with one activation row of n elements, in the float order of
// llama.cpp's AVX2 vec_dot kernels (§8.3, §8.4, §8.5, §8.7): ggml_vec_dot_<w>_<a> in
// ggml-cpu/arch/x86/quants.c.
float vec_dot_q4_K_q8_K(const BlockQ4_K* x, const BlockQ8_K* y, int64_t n);
float vec_dot_q5_K_q8_K(const BlockQ5_K* x, const BlockQ8_K* y, int64_t n);
float vec_dot_q6_K_q8_K(const BlockQ6_K* x, const BlockQ8_K* y, int64_t n);
float vec_dot_q8_0_q8_0(const BlockQ8_0* x, const BlockQ8_0* y, int64_t n);

// llama.cpp's DEFAULT Q4_K path on AVX2 CPUs (§8.6): weights with rows % 8 == 0 are repacked 8 rows
// at a time and multiplied by ggml_gemv_q4_K_8x8_q8_K (activation rows left over after groups of 4)
// or ggml_gemm_q4_K_8x8_q8_K (groups of 4 activation rows). The float orders of those kernels, for
// one weight row and one activation row in plain (un-repacked) blocks:
float vec_dot_q4_K_q8_K_repack_gemv(const BlockQ4_K* x, const BlockQ8_K* y, int64_t n);
float vec_dot_q4_K_q8_K_repack_gemm(const BlockQ4_K* x, const BlockQ8_K* y, int64_t n);
// The activation quantizer of that GEMM (ggml_quantize_mat_q8_K_4x8, §7.2), per row: d is negative
// iff some element equals +amax (the reference picks the sign of the FIRST extreme element).
void quantize_row_q8_K_repack(const float* x, BlockQ8_K* y, int64_t n);

}  // namespace ckjit::quant
