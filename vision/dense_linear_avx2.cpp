// The AVX2 copy of DenseLinear's repack (dense_linear_kernels.h); chosen by jit/hand_kernels.cpp
// (HandOp::dense_panels) where the DenseLinear's Isa has AVX2.
#include <cstring>

#include "jit/transpose_avx2.h"
#include "vision/dense_linear_kernels.h"

namespace ckjit::vision::kernels {

// A full panel of P rows (8 or 16), 8 elements of K at a time: each group of 8 rows an 8 x 8
// transpose (row l's run in, element kk of every row out), so every store is a whole 16- or
// 32-byte run of the panel; a K tail is copied element by element. A partial last panel takes the
// portable walk (its missing columns are zeroed there).
CKJIT_AVX2 void pack_panel_avx2(const uint8_t* src, int es, int64_t n, int64_t k, int P, int64_t p, uint8_t* dst) {
  if ((p + 1) * P > n) {
    pack_panel_portable(src, es, n, k, P, p, dst);
    return;
  }
  const uint8_t* rows[16];
  for (int l = 0; l < P; ++l) rows[l] = src + (p * P + l) * k * es;
  const int64_t k8 = k / 8 * 8;
  for (int64_t kk = 0; kk < k8; kk += 8)
    for (int h = 0; h < P; h += 8) {
      const uint8_t* at[8];
      for (int l = 0; l < 8; ++l) at[l] = rows[h + l] + kk * es;
      uint8_t* out = dst + (kk * P + h) * es;
      if (es == 4) jit::detail::transpose8x8_32(at, out, P * 4);
      else jit::detail::transpose8x8_16(at, out, P * 2);
    }
  for (int64_t kk = k8; kk < k; ++kk)
    for (int l = 0; l < P; ++l) std::memcpy(dst + (kk * P + l) * es, rows[l] + kk * es, size_t(es));
}

}  // namespace ckjit::vision::kernels
