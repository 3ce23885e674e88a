// The FMA-contracted Q8_K quantizer rounds the exact product iscale*x (half to even).
#include <doctest/doctest.h>


#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "jit/isa_select.h"
#include "runtime/quants/q8_k_native.h"
#include "tests/unit/skip.h"

using namespace ckjit::quant;

TEST_SUITE("decoder") {
TEST_CASE("q8_K native quantizer: quants are the exact product rounded half to even") {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 1.5f);
  std::vector<float> x(256 * 64);
  for (auto& v : x) v = nd(rng);
  x[17] = 0.0f;
  std::vector<BlockQ8_K> y(64), r(64);
  quantize_row_q8_K_fma_scalar(x.data(), y.data(), int64_t(x.size()));
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

namespace {
// A vectorized variant against the scalar one on rows with the edge blocks: an all-zero block, an
// extreme max, a denormal, a tie in |x| (the first one sets the sign), a NaN (skipped by the max
// scan), a block whose 127/max overflows.
void check_variant_bytes(void (*variant)(const float*, BlockQ8_K*, int64_t), uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int rep = 0; rep < 10; ++rep) {
    std::vector<float> x(256 * 32);
    for (auto& v : x) v = nd(rng) * (rep % 2 ? 1e-3f : 50.0f);
    if (rep == 3) std::fill(x.begin(), x.begin() + 256, 0.0f);
    if (rep == 4) x[5] = -1e30f, x[300] = 1e-40f;
    if (rep == 5) x[700] = -1e3f, x[701] = 1e3f;
    if (rep == 6) x[9] = std::numeric_limits<float>::quiet_NaN();
    if (rep == 7) std::fill(x.begin() + 256, x.begin() + 512, 1e-45f);
    std::vector<BlockQ8_K> a(32), b(32);
    std::memset(a.data(), 0xAA, a.size() * sizeof a[0]);
    std::memset(b.data(), 0x55, b.size() * sizeof b[0]);
    quantize_row_q8_K_fma_scalar(x.data(), a.data(), int64_t(x.size()));
    variant(x.data(), b.data(), int64_t(x.size()));
    CAPTURE(rep);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof a[0]) == 0);
  }
}
}  // namespace

TEST_CASE("q8_K native quantizer: the AVX-512 variant writes the scalar variant's bytes") {
  const ckjit::topo::Isa isa = ckjit::jit::runtime_isa();
  if (!(isa.avx512f && isa.avx512bw)) {
    CKJIT_SKIP("AVX512F+BW not usable here, the AVX-512 Q8_K quantizer was not checked");
  }
  check_variant_bytes(quantize_row_q8_K_fma_avx512, 21);
}

TEST_CASE("q8_K native quantizer: the AVX2 variant writes the scalar variant's bytes") {
  check_variant_bytes(quantize_row_q8_K_fma_avx2, 22);
}
}

#include "runtime/quants/vec_dot_avx2.h"

TEST_SUITE("decoder") {
TEST_CASE("q6_K x q8_K AVX2 dot is bit-identical to the llama.cpp-order reference") {
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {256, 512, 2048, 6144}) {
    for (int rep = 0; rep < 8; ++rep) {
      std::vector<float> w(static_cast<size_t>(n)), a(static_cast<size_t>(n));
      for (auto& v : w) v = nd(rng) * (rep % 2 ? 0.02f : 3.0f);
      for (auto& v : a) v = nd(rng) * (rep % 3 ? 1.0f : 40.0f);
      std::vector<BlockQ6_K> wq(static_cast<size_t>(n / 256));
      std::vector<BlockQ8_K> aq(static_cast<size_t>(n / 256));
      quantize_row(ckjit::TensorType::Q6_K, w.data(), wq.data(), n);
      quantize_row_q8_K(a.data(), aq.data(), n);
      const float ref = vec_dot_q6_K_q8_K(wq.data(), aq.data(), n);
      const float fast = vec_dot_q6_K_q8_K_avx2(wq.data(), aq.data(), n);
      CAPTURE(n);
      CHECK(std::memcmp(&ref, &fast, 4) == 0);
    }
  }
}
}

TEST_SUITE("decoder") {
TEST_CASE("q8_0 x q8_0 AVX2 dot is bit-identical to the llama.cpp-order reference") {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (int64_t n : {32, 256, 2048}) {
    for (int rep = 0; rep < 8; ++rep) {
      std::vector<float> w(static_cast<size_t>(n)), a(static_cast<size_t>(n));
      for (auto& v : w) v = nd(rng) * (rep % 2 ? 0.02f : 3.0f);
      for (auto& v : a) v = nd(rng);
      std::vector<BlockQ8_0> wq(static_cast<size_t>(n / 32)), aq(static_cast<size_t>(n / 32));
      quantize_row(ckjit::TensorType::Q8_0, w.data(), wq.data(), n);
      quantize_row_q8_0_x86(a.data(), aq.data(), n);
      const float ref = vec_dot_q8_0_q8_0(wq.data(), aq.data(), n);
      const float fast = vec_dot_q8_0_q8_0_avx2(wq.data(), aq.data(), n);
      CHECK(std::memcmp(&ref, &fast, 4) == 0);
    }
  }
}
}
