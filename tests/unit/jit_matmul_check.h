#pragma once
// Shared helpers of the JIT matmul tests: random blocks of each weight type, repacked weights,
// Q8_K activations, and check_matmul (a generated kernel against its scalar twin, bit for bit).
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "jit/kernel_spec.h"
#include "jit/packed_weights.h"
#include "runtime/quants/quants.h"

namespace ckjit::test {

std::vector<quant::BlockQ4_K> random_q4k(int64_t n, int64_t k, uint32_t seed);
std::vector<quant::BlockQ5_K> random_q5k(int64_t n, int64_t k, uint32_t seed);
std::vector<quant::BlockQ6_K> random_q6k(int64_t n, int64_t k, uint32_t seed);
std::vector<quant::BlockQ8_0> random_q80(int64_t n, int64_t k, uint32_t seed);
// Random weights of the spec's type, repacked for its ISA.
jit::PackedWeights random_packed(const jit::KernelSpec& spec, int64_t n, int64_t k, uint32_t seed);
// m rows of k normal floats quantized with quant::quantize_row_q8_K.
std::vector<quant::BlockQ8_K> random_q8k(int64_t m, int64_t k, uint32_t seed);
// A matmul spec with weights of type w (Q8_0 weights take Q8_0 activations, the K-quants Q8_K).
jit::KernelSpec matmul_spec(TensorType w, jit::Op op, int mr, int nr, int64_t k, jit::Epilogue ep = jit::Epilogue::Store,
                            jit::IsaPath isa = jit::IsaPath::Avx512);
inline jit::KernelSpec q4k_spec(jit::Op op, int mr, int nr, int64_t k, jit::Epilogue ep = jit::Epilogue::Store,
                                jit::IsaPath isa = jit::IsaPath::Avx512) {
  return matmul_spec(TensorType::Q4_K, op, mr, nr, k, ep, isa);
}
// Runs kernel and reference on the whole (m x n) problem (padded output rows, residual given)
// and requires identical bits and untouched padding (doctest CHECK/REQUIRE).
void check_matmul(const jit::KernelSpec& spec, int64_t m, int64_t n, uint32_t seed);
// check_matmul of spec (its k replaced) for every k in ks, m in {1, 2, 3, 17} and n in ns, with
// seed k + m + n.
void check_matmul_shapes(jit::KernelSpec spec, std::initializer_list<int64_t> ks, std::initializer_list<int64_t> ns);

}  // namespace ckjit::test
