// Unit tests of the quant formats (runtime/quants): conversions, scale packing, quantizer round
// trips and the reference dot products against a plain float dot of the dequantized rows.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "runtime/error.h"
#include "runtime/quants/quants.h"

using namespace ckjit;
using namespace ckjit::quant;

namespace {

uint32_t bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

std::vector<float> random_row(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, scale);
  std::vector<float> v(static_cast<size_t>(n));
  for (auto& x : v) x = nd(rng);
  return v;
}

// Max |x - dequant(quant(x))| relative to the block's max |x|, over all blocks of a row.
template <class Block>
double worst_relative_error(TensorType type, const std::vector<float>& x, int block_elems) {
  const int64_t n = int64_t(x.size());
  std::vector<Block> q(static_cast<size_t>(n / block_elems));
  std::vector<float> back(x.size());
  quantize_row(type, x.data(), q.data(), n);
  dequantize_row(type, q.data(), back.data(), n);
  double worst = 0;
  for (int64_t b = 0; b < n / block_elems; ++b) {
    double amax = 0, err = 0;
    for (int j = 0; j < block_elems; ++j) {
      amax = std::max(amax, double(std::fabs(x[size_t(b * block_elems + j)])));
      err = std::max(err, double(std::fabs(x[size_t(b * block_elems + j)] - back[size_t(b * block_elems + j)])));
    }
    if (amax > 0) worst = std::max(worst, err / amax);
  }
  return worst;
}

double float_dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * double(b[i]);
  return s;
}

}  // namespace

// (No commas or semicolons in test names: doctest_discover_tests then drops the CTest label.)
TEST_SUITE("quants") {

TEST_CASE("f16 conversion: exact widening of every half and round trip") {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(uint16_t(h));
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) {
      CHECK(std::isnan(f));
      CHECK((bits(f) & 0x00400000u) != 0);  // quiet
      CHECK(f32_to_f16(f) == uint16_t((h & 0x8000) | 0x7e00));
    } else {
      REQUIRE(f32_to_f16(f) == h);
    }
  }
  CHECK(f16_to_f32(0x3c00) == 1.0f);
  CHECK(f16_to_f32(0x0001) == std::ldexp(1.0f, -24));  // smallest subnormal
  CHECK(f16_to_f32(0x03ff) == std::ldexp(1023.0f, -24));
  CHECK(f16_to_f32(0x7bff) == 65504.0f);
  CHECK(std::isinf(f16_to_f32(0xfc00)));
  CHECK(f16_to_f32(0x8000) == 0.0f);
  CHECK(std::signbit(f16_to_f32(0x8000)));
}

TEST_CASE("f16 conversion: round to nearest even with overflow and underflow") {
  CHECK(f32_to_f16(1.0f + std::ldexp(1.0f, -11)) == 0x3c00);      // tie -> even (down)
  CHECK(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)) == 0x3c02);  // tie -> even (up)
  CHECK(f32_to_f16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)) == 0x3c01);
  CHECK(f32_to_f16(65519.0f) == 0x7bff);
  CHECK(f32_to_f16(65520.0f) == 0x7c00);  // tie between 65504 and 65536 -> even = inf
  CHECK(f32_to_f16(1e30f) == 0x7c00);
  CHECK(f32_to_f16(-1e30f) == 0xfc00);
  CHECK(f32_to_f16(std::numeric_limits<float>::infinity()) == 0x7c00);
  CHECK(f32_to_f16(std::ldexp(1.0f, -25)) == 0x0000);   // half the smallest subnormal: tie -> 0
  CHECK(f32_to_f16(std::ldexp(1.5f, -25)) == 0x0001);
  CHECK(f32_to_f16(std::ldexp(3.0f, -25)) == 0x0002);   // 1.5 ulp: tie -> even (2)
  CHECK(f32_to_f16(-std::ldexp(1.0f, -30)) == 0x8000);  // signed zero
  CHECK(f32_to_f16(from_bits(0x00000001)) == 0x0000);   // float denormal
  CHECK(f32_to_f16(std::ldexp(1023.5f, -24)) == 0x0400);  // rounds up into the normal range
  CHECK(f32_to_f16(-std::numeric_limits<float>::quiet_NaN()) == 0xfe00);
}

TEST_CASE("bf16 conversion: round to nearest even with NaN and kept subnormals") {
  CHECK(f32_to_bf16(1.0f) == 0x3f80);
  CHECK(f32_to_bf16(from_bits(0x3f808000)) == 0x3f80);  // tie -> even
  CHECK(f32_to_bf16(from_bits(0x3f818000)) == 0x3f82);  // tie -> even (up)
  CHECK(f32_to_bf16(from_bits(0x3f808001)) == 0x3f81);
  CHECK(f32_to_bf16(from_bits(0x7f7fffff)) == 0x7f80);  // FLT_MAX rounds to inf
  CHECK(f32_to_bf16(from_bits(0x00010000)) == 0x0001);  // subnormal, not flushed
  CHECK(f32_to_bf16(from_bits(0x7f800001)) == 0x7fc0);  // signalling NaN -> quiet NaN
  CHECK(f32_to_bf16(from_bits(0xff812345)) == 0xffc1);
  for (uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_f32(uint16_t(b));
    CHECK(bits(f) == b << 16);
    if (!std::isnan(f)) REQUIRE(f32_to_bf16(f) == b);
  }
}

TEST_CASE("k4 scale packing round trips every 6-bit value") {
  std::mt19937 rng(7);
  for (int it = 0; it < 2000; ++it) {
    BlockQ4_K b{};
    uint8_t sc[8], mn[8];
    for (int j = 0; j < 8; ++j) { sc[j] = uint8_t(rng() & 63); mn[j] = uint8_t(rng() & 63); }
    if (it == 0) for (int j = 0; j < 8; ++j) sc[j] = mn[j] = 63;
    // Pack by hand following §4.2 and compare with unpack.
    uint8_t s[12] = {};
    for (int j = 0; j < 4; ++j) {
      s[j] = uint8_t(sc[j] | ((sc[j + 4] >> 4) << 6));
      s[j + 4] = uint8_t(mn[j] | ((mn[j + 4] >> 4) << 6));
      s[j + 8] = uint8_t((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
    }
    std::memcpy(b.scales, s, 12);
    uint8_t sc2[8], mn2[8];
    unpack_k4_scales(b.scales, sc2, mn2);
    for (int j = 0; j < 8; ++j) {
      REQUIRE(sc2[j] == sc[j]);
      REQUIRE(mn2[j] == mn[j]);
    }
  }
}

TEST_CASE("q8_K: extreme element becomes -127 and d carries its sign and bsums are exact") {
  std::vector<float> x = random_row(512, 11);
  x[37] = 9.0f;    // positive extreme in block 0
  x[300] = -7.5f;  // negative extreme in block 1
  BlockQ8_K q[2];
  quantize_row_q8_K(x.data(), q, 512);
  CHECK(q[0].qs[37] == -127);
  CHECK(q[0].d < 0);
  CHECK(q[0].d == doctest::Approx(-9.0 / 127));
  CHECK(q[1].qs[300 - 256] == -127);
  CHECK(q[1].d > 0);
  for (const auto& b : q) {
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += b.qs[16 * g + l];
      CHECK(b.bsums[g] == s);
    }
    for (int j = 0; j < 256; ++j) CHECK(b.qs[j] >= -127);
  }
  // Both +amax and -amax present: the first one found decides.
  std::vector<float> y(256, 0.25f);
  y[3] = -2.0f;
  y[10] = 2.0f;
  BlockQ8_K r;
  quantize_row_q8_K(y.data(), &r, 256);
  CHECK(r.qs[3] == -127);
  CHECK(r.qs[10] == 127);
  // All zeros: everything zero.
  std::vector<float> z(256, 0.0f);
  std::memset(&r, 0x55, sizeof r);
  quantize_row_q8_K(z.data(), &r, 256);
  CHECK(r.d == 0.0f);
  for (int j = 0; j < 256; ++j) CHECK(r.qs[j] == 0);
  for (int g = 0; g < 16; ++g) CHECK(r.bsums[g] == 0);
}

TEST_CASE("q8_0: reference rounds half away from zero and x86 variant half to even") {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // d = 1, id = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 3.5f;
  BlockQ8_0 ref, x86;
  quantize_row(TensorType::Q8_0, x.data(), &ref, 32);
  quantize_row_q8_0_x86(x.data(), &x86, 32);
  CHECK(f16_to_f32(ref.d) == 1.0f);
  CHECK(ref.qs[0] == 127);
  CHECK(ref.qs[1] == 3);
  CHECK(ref.qs[2] == -3);
  CHECK(x86.qs[1] == 2);
  CHECK(x86.qs[2] == -2);
  CHECK(x86.qs[3] == 4);
}

TEST_CASE("quantize -> dequantize error bounds") {
  const auto x = random_row(256 * 64, 3);
  CHECK(worst_relative_error<BlockQ8_0>(TensorType::Q8_0, x, 32) < 0.5 / 127 * 1.01 + 1e-3);
  CHECK(worst_relative_error<BlockQ4_K>(TensorType::Q4_K, x, 256) < 0.2);
  CHECK(worst_relative_error<BlockQ5_K>(TensorType::Q5_K, x, 256) < 0.1);
  CHECK(worst_relative_error<BlockQ6_K>(TensorType::Q6_K, x, 256) < 0.05);
  std::vector<uint16_t> h(x.size());
  std::vector<float> back(x.size());
  quantize_row(TensorType::F16, x.data(), h.data(), int64_t(x.size()));
  dequantize_row(TensorType::F16, h.data(), back.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(std::fabs(back[i] - x[i]) <= std::fabs(x[i]) * 0x1p-11f + 0x1p-25f);
  quantize_row(TensorType::BF16, x.data(), h.data(), int64_t(x.size()));
  dequantize_row(TensorType::BF16, h.data(), back.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) REQUIRE(std::fabs(back[i] - x[i]) <= std::fabs(x[i]) * 0x1p-8f);
  // Q8_K activations: error at most half a step.
  std::vector<BlockQ8_K> q8(x.size() / 256);
  quantize_row_q8_K(x.data(), q8.data(), int64_t(x.size()));
  dequantize_row(TensorType::Q8_K, q8.data(), back.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    REQUIRE(std::fabs(back[i] - x[i]) <= std::fabs(q8[i / 256].d) * 0.5f * 1.001f);
}

TEST_CASE("constant and zero blocks quantize without NaN") {
  for (float c : {0.0f, 1.0f, -3.0f, 1e-20f}) {
    std::vector<float> x(256, c), back(256);
    BlockQ4_K q4; BlockQ5_K q5; BlockQ6_K q6;
    quantize_row(TensorType::Q4_K, x.data(), &q4, 256);
    dequantize_row(TensorType::Q4_K, &q4, back.data(), 256);
    for (float v : back) CHECK(std::fabs(v - c) <= std::fabs(c) * 0.05f + 1e-6f);
    quantize_row(TensorType::Q5_K, x.data(), &q5, 256);
    dequantize_row(TensorType::Q5_K, &q5, back.data(), 256);
    for (float v : back) CHECK(std::fabs(v - c) <= std::fabs(c) * 0.05f + 1e-6f);
    quantize_row(TensorType::Q6_K, x.data(), &q6, 256);
    dequantize_row(TensorType::Q6_K, &q6, back.data(), 256);
    for (float v : back) CHECK(std::fabs(v - c) <= std::fabs(c) * 0.05f + 1e-6f);
  }
}

TEST_CASE("reference dot products agree with the float dot of dequantized rows") {
  const int64_t n = 256 * 16;
  const auto w = random_row(n, 21), a = random_row(n, 22);
  std::vector<float> wd(static_cast<size_t>(n)), ad(static_cast<size_t>(n));
  std::vector<BlockQ8_K> a8(static_cast<size_t>(n / 256));
  quantize_row_q8_K(a.data(), a8.data(), n);
  dequantize_row(TensorType::Q8_K, a8.data(), ad.data(), n);

  std::vector<BlockQ4_K> w4(static_cast<size_t>(n / 256));
  quantize_row(TensorType::Q4_K, w.data(), w4.data(), n);
  dequantize_row(TensorType::Q4_K, w4.data(), wd.data(), n);
  CHECK(vec_dot_q4_K_q8_K(w4.data(), a8.data(), n) == doctest::Approx(float_dot(wd, ad)).epsilon(1e-4));

  std::vector<BlockQ5_K> w5(static_cast<size_t>(n / 256));
  quantize_row(TensorType::Q5_K, w.data(), w5.data(), n);
  dequantize_row(TensorType::Q5_K, w5.data(), wd.data(), n);
  CHECK(vec_dot_q5_K_q8_K(w5.data(), a8.data(), n) == doctest::Approx(float_dot(wd, ad)).epsilon(1e-4));

  std::vector<BlockQ6_K> w6(static_cast<size_t>(n / 256));
  quantize_row(TensorType::Q6_K, w.data(), w6.data(), n);
  dequantize_row(TensorType::Q6_K, w6.data(), wd.data(), n);
  CHECK(vec_dot_q6_K_q8_K(w6.data(), a8.data(), n) == doctest::Approx(float_dot(wd, ad)).epsilon(1e-4));

  std::vector<BlockQ8_0> w8(static_cast<size_t>(n / 32)), a80(static_cast<size_t>(n / 32));
  quantize_row(TensorType::Q8_0, w.data(), w8.data(), n);
  quantize_row_q8_0_x86(a.data(), a80.data(), n);
  dequantize_row(TensorType::Q8_0, w8.data(), wd.data(), n);
  dequantize_row(TensorType::Q8_0, a80.data(), ad.data(), n);
  CHECK(vec_dot_q8_0_q8_0(w8.data(), a80.data(), n) == doctest::Approx(float_dot(wd, ad)).epsilon(1e-4));
}

TEST_CASE("q8_K repack variant: sign follows any +amax rather than the first extreme") {
  std::vector<float> x(256, 0.5f);
  x[3] = -2.0f;  // -amax first
  x[10] = 2.0f;
  BlockQ8_K ref, rep;
  quantize_row_q8_K(x.data(), &ref, 256);
  quantize_row_q8_K_repack(x.data(), &rep, 256);
  CHECK(ref.d > 0);
  CHECK(rep.d < 0);
  for (int j = 0; j < 256; ++j) CHECK(rep.qs[j] == -ref.qs[j]);
  for (int g = 0; g < 16; ++g) CHECK(rep.bsums[g] == -ref.bsums[g]);
  x[10] = 1.0f;  // only -amax: both variants agree
  quantize_row_q8_K(x.data(), &ref, 256);
  quantize_row_q8_K_repack(x.data(), &rep, 256);
  CHECK(std::memcmp(&ref, &rep, sizeof ref) == 0);
}

TEST_CASE("repacked Q4_K float orders agree closely with the vec_dot order") {
  const int64_t n = 256 * 32;
  const auto w = random_row(n, 31), a = random_row(n, 32);
  std::vector<BlockQ4_K> w4(static_cast<size_t>(n / 256));
  std::vector<BlockQ8_K> a8(static_cast<size_t>(n / 256));
  quantize_row(TensorType::Q4_K, w.data(), w4.data(), n);
  quantize_row_q8_K(a.data(), a8.data(), n);
  const float ref = vec_dot_q4_K_q8_K(w4.data(), a8.data(), n);
  CHECK(vec_dot_q4_K_q8_K_repack_gemv(w4.data(), a8.data(), n) == doctest::Approx(ref).epsilon(1e-5));
  CHECK(vec_dot_q4_K_q8_K_repack_gemm(w4.data(), a8.data(), n) == doctest::Approx(ref).epsilon(1e-5));
}

TEST_CASE("row functions reject bad lengths and unsupported types") {
  std::vector<float> x(300, 1.0f);
  std::vector<uint8_t> buf(4096);
  CHECK_THROWS_AS(quantize_row(TensorType::Q4_K, x.data(), buf.data(), 300), Error);
  CHECK_THROWS_AS(dequantize_row(TensorType::Q8_0, buf.data(), x.data(), 33), Error);
  CHECK_THROWS_AS(dequantize_row(TensorType::Q4_0, buf.data(), x.data(), 32), Error);
  CHECK_THROWS_AS(quantize_row(TensorType::Q8_K, x.data(), buf.data(), 256), Error);
}

}  // TEST_SUITE
