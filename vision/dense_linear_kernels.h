#pragma once
// The copies of DenseLinear's load-time repack (a transposition: only bytes move, so every copy
// gives the same bytes): AVX2 (dense_linear_avx2.cpp: 8 x 8 transposes) and the portable C++ twin
// (dense_linear.cpp). DenseLinear takes one at construction, the one jit::hand_isa chooses for the
// Isa it is built with (HandOp::dense_panels).
#include <cstdint>

namespace ckjit::vision::kernels {

// Panel p of a weight of n rows of k elements (es = 2 or 4 bytes each; row r at src + r * k * es)
// into dst (k * P elements, P = 8 or 16): element kk of row p * P + l goes to dst + (kk * P + l) * es.
// A last panel of fewer than P rows has its missing columns zero.
void pack_panel_avx2(const uint8_t* src, int es, int64_t n, int64_t k, int P, int64_t p, uint8_t* dst);
void pack_panel_portable(const uint8_t* src, int es, int64_t n, int64_t k, int P, int64_t p, uint8_t* dst);

}  // namespace ckjit::vision::kernels
