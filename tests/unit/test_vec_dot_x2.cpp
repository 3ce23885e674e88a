// The two-row AVX-512 Q6_K dot equals the AVX2 llama.cpp-order dot bit for bit on each row: random
// raw blocks (any ql/qh/scales bytes, scales down to -128), extreme activations, several lengths;
// and its several-activation-rows forms (batched decode; plain and VNNI) give each activation row the same bits.
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <vector>

#include "jit/isa_select.h"
#include "runtime/quants/vec_dot_avx2.h"
#include "runtime/quants/vec_dot_x2_avx512.h"
#include "tests/unit/skip.h"

using namespace ckjit::quant;

namespace {

std::vector<BlockQ6_K> random_q6(std::mt19937& rng, size_t nb, int rep) {
  std::vector<BlockQ6_K> w(nb);
  for (auto& b : w) {
    for (auto& v : b.ql) v = uint8_t(rng());
    for (auto& v : b.qh) v = uint8_t(rng());
    for (auto& v : b.scales) v = int8_t(rep == 3 ? -128 : int(rng() % 256) - 128);
    uint16_t h = uint16_t(0x3000 + rng() % 0x1000);  // f16 scales of either sign
    if (rng() % 2) h |= 0x8000;
    std::memcpy(&b.d, &h, 2);
  }
  return w;
}

std::vector<BlockQ8_K> random_q8(std::mt19937& rng, size_t nb, int rep) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<BlockQ8_K> a(nb);
  for (auto& b : a) {
    b.d = nd(rng) * (rep % 3 ? 0.01f : 100.0f);
    int sum16 = 0;
    for (int j = 0; j < 256; ++j) {
      b.qs[j] = int8_t(rep == 5 ? 127 : rep == 6 ? -128 : int(rng() % 256) - 128);
      sum16 += b.qs[j];
      if (j % 16 == 15) b.bsums[j / 16] = int16_t(sum16), sum16 = 0;
    }
  }
  return a;
}

bool vnni512_dot_runs() {
  const ckjit::topo::Isa isa = ckjit::jit::runtime_isa();
  return isa.avx512f && isa.avx512bw && isa.avx512dq && isa.avx512vl && isa.avx512vnni && isa.f16c;
}

bool avx512_dot_runs() {
  const ckjit::topo::Isa isa = ckjit::jit::runtime_isa();
  return isa.avx512f && isa.avx512bw && isa.avx512dq && isa.avx512vl && isa.f16c;
}

}  // namespace

TEST_SUITE("decoder") {
TEST_CASE("q6_K x q8_K two-row AVX-512 dot is bit-identical to the AVX2 order per row") {
  if (!avx512_dot_runs()) CKJIT_SKIP("AVX-512 BW/DQ/VL not available: the two-row dot is not used on this CPU");
  std::mt19937 rng(11);
  int checked = 0;
  for (int64_t n : {256, 512, 2048, 6144}) {
    const size_t nb = size_t(n / 256);
    for (int rep = 0; rep < 16; ++rep) {
      const std::vector<BlockQ6_K> w0 = random_q6(rng, nb, rep), w1 = random_q6(rng, nb, rep);
      const std::vector<BlockQ8_K> a = random_q8(rng, nb, rep);
      float got[2];
      vec_dot_q6_K_q8_K_x2_avx512(w0.data(), w1.data(), a.data(), n, got);
      const float want0 = vec_dot_q6_K_q8_K_avx2(w0.data(), a.data(), n);
      const float want1 = vec_dot_q6_K_q8_K_avx2(w1.data(), a.data(), n);
      CAPTURE(n);
      CAPTURE(rep);
      CHECK(std::memcmp(&got[0], &want0, 4) == 0);
      CHECK(std::memcmp(&got[1], &want1, 4) == 0);
      ++checked;
    }
  }
  CHECK(checked == 64);
}

TEST_CASE("q6_K x q8_K two-row dot over several activation rows gives each row's own bits") {
  if (!avx512_dot_runs()) CKJIT_SKIP("AVX-512 BW/DQ/VL not available: the two-row dot is not used on this CPU");
  std::mt19937 rng(12);
  int checked = 0;
  for (int64_t n : {256, 2048}) {
    const size_t nb = size_t(n / 256);
    for (int rep = 0; rep < 8; ++rep) {
      const std::vector<BlockQ6_K> w0 = random_q6(rng, nb, rep), w1 = random_q6(rng, nb, rep);
      std::vector<std::vector<BlockQ8_K>> acts;
      std::vector<const BlockQ8_K*> ys;
      for (int j = 0; j < 9; ++j) acts.push_back(random_q8(rng, nb, (rep + j) % 8));
      for (const auto& a : acts) ys.push_back(a.data());
      for (int rows = 1; rows <= 9; ++rows) {
        std::vector<float> got(size_t(2 * rows));
        vec_dot_q6_K_q8_K_x2_rows_avx512(w0.data(), w1.data(), ys.data(), rows, n, got.data());
        for (int j = 0; j < rows; ++j) {
          float want[2];
          vec_dot_q6_K_q8_K_x2_avx512(w0.data(), w1.data(), ys[size_t(j)], n, want);
          CAPTURE(n);
          CAPTURE(rows);
          CAPTURE(j);
          CHECK(std::memcmp(&got[size_t(2 * j)], want, 8) == 0);
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 2 * 8 * 45);
}

TEST_CASE("q6_K x q8_K VNNI several-row dot gives each row the AVX2 order's bits") {
  if (!vnni512_dot_runs()) CKJIT_SKIP("AVX-512 VNNI not available: the VNNI several-row dot is not used on this CPU");
  std::mt19937 rng(13);
  int checked = 0;
  for (int64_t n : {256, 2048, 6144}) {
    const size_t nb = size_t(n / 256);
    for (int rep = 0; rep < 8; ++rep) {
      const std::vector<BlockQ6_K> w0 = random_q6(rng, nb, rep), w1 = random_q6(rng, nb, rep);
      std::vector<std::vector<BlockQ8_K>> acts;
      std::vector<const BlockQ8_K*> ys;
      for (int j = 0; j < 17; ++j) acts.push_back(random_q8(rng, nb, (rep + j) % 8));
      for (const auto& a : acts) ys.push_back(a.data());
      for (int rows : {1, 2, 5, 8, 9, 17}) {
        std::vector<float> got(size_t(2 * rows));
        vec_dot_q6_K_q8_K_x2_rows_vnni512(w0.data(), w1.data(), ys.data(), rows, n, got.data());
        for (int j = 0; j < rows; ++j) {
          const float want0 = vec_dot_q6_K_q8_K_avx2(w0.data(), ys[size_t(j)], n);
          const float want1 = vec_dot_q6_K_q8_K_avx2(w1.data(), ys[size_t(j)], n);
          CAPTURE(n);
          CAPTURE(rows);
          CAPTURE(j);
          CHECK(std::memcmp(&got[size_t(2 * j)], &want0, 4) == 0);
          CHECK(std::memcmp(&got[size_t(2 * j + 1)], &want1, 4) == 0);
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 3 * 8 * (1 + 2 + 5 + 8 + 9 + 17));
}
}
