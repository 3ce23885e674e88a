// The FMA-contracted Q8_K quantizer rounds the exact product iscale*x (half to even).
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <vector>

#include "runtime/quants/q8_k_native.h"

using namespace ckjit::quant;

TEST_SUITE("decoder") {
TEST_CASE("q8_K native quantizer: quants are the exact product rounded half to even") {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.5f);
  std::vector<float> x(256 * 64);
  for (auto& v : x) v = nd(rng);
  x[17] = 0.0f;
  std::vector<BlockQ8_K> y(64), r(64);
  quantize_row_q8_K_fma(x.data(), y.data(), int64_t(x.size()));
  quantize_row_q8_K(x.data(), r.data(), int64_t(x.size()));
  int differ = 0;
  for (int b = 0; b < 64; ++b) {
    CHECK(y[b].d == r[b].d);
    const float iscale = 1.0f / r[b].d;  // exact inverse is not needed: recompute as llama.cpp does
    float amax = 0, mx = 0;
    for (int j = 0; j < 256; ++j)
      if (std::fabs(x[256 * b + j]) > amax) amax = std::fabs(x[256 * b + j]), mx = x[256 * b + j];
    const float is = -127.0f / mx;
    (void)iscale;
    int bs = 0;
    for (int j = 0; j < 256; ++j) {
      const double exact = double(is) * double(x[256 * b + j]);  // exact: 24x24 bits fit a double
      const int want = std::min(127, int(std::nearbyint(exact)));
      CHECK(y[b].qs[j] == want);
      differ += y[b].qs[j] != r[b].qs[j];
      bs += y[b].qs[j];
      if (j % 16 == 15) {
        CHECK(y[b].bsums[j / 16] == bs);
        bs = 0;
      }
    }
  }
  CHECK(differ < 10);  // the two roundings agree almost everywhere
}
}
