// The scalar twins' own arithmetic against double-precision math. The JIT kernels are checked bit
// for bit against these twins elsewhere; a twin that shares a mistake with its emitter (the SwiGLU
// epilogue's exp polynomial is one table, jit/silu_constants.h) would pass those checks, so the
// twins are held here to what the formulas say: silu(g) * u within a few ulp, and the op=dense
// epilogues (bias, bias + residual, accumulation) within the FMA chain's rounding of the exact sum.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "jit/kernels.h"
#include "jit/reference.h"

using namespace ckjit;

namespace {

float ulp_of(float x) {
  const float a = std::fabs(x);
  return std::nextafter(a, std::numeric_limits<float>::infinity()) - a;
}

}  // namespace

TEST_SUITE("jit") {

TEST_CASE("silu_mul_ref (the SwiGLU epilogue's exp polynomial shared with the emitters) is silu(g) * u in double within 4 ulp") {
  std::vector<float> gs;
  for (int i = -20000; i <= 20000; ++i) gs.push_back(float(i) * 0.005f);  // [-100, 100]
  for (float g : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-7f, -1e-7f, 86.9f, -86.9f, 87.0f, -87.0f, 88.0f, -88.0f, 1e4f, -1e4f})
    gs.push_back(g);
  double worst_ulps = 0;
  float worst_g = 0;
  int checked = 0;
  for (float u : {1.0f, -3.25f, 7e-3f})
    for (float g : gs) {
      const double exact = double(g) / (1.0 + std::exp(-double(g))) * double(u);
      const float got = jit::silu_mul_ref(g, u);
      REQUIRE(std::isfinite(got));
      // Below g = -87 the exponent is clamped (jit/silu_constants.h): silu(g) u is then under
      // |g u| e^-87 in magnitude, and the twin returns g u / (1 + e^88) ~ g u 6.05e-39 instead.
      const double err = std::fabs(double(got) - exact);
      if (g < -87.0f) {
        CHECK_MESSAGE(err <= std::fabs(double(g) * double(u)) * 1.7e-38, "g " << g << " u " << u << ": " << got << " vs " << exact);
        continue;
      }
      const double ulps = err / double(ulp_of(float(exact)));
      if (ulps > worst_ulps) worst_ulps = ulps, worst_g = g;
      if (!(ulps <= 4.0)) CHECK_MESSAGE(ulps <= 4.0, "g " << g << " u " << u << ": " << got << " vs " << exact << " (" << ulps << " ulp)");
      ++checked;
    }
  MESSAGE("silu_mul_ref: worst " << worst_ulps << " ulp at g = " << worst_g << " over " << checked << " points");
  CHECK(checked > 100000);
}

TEST_CASE("op=dense scalar twin: bias / bias + residual / accumulation are the exact sums within the FMA chain's rounding") {
  using jit::Epilogue;
  const jit::IsaPath isa = jit::IsaPath::Avx2;  // the twin's arithmetic is the same for every path
  const int P = jit::panel_cols(isa);
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  int checked = 0;
  for (Epilogue ep : {Epilogue::Store, Epilogue::Bias, Epilogue::BiasResidual})
    for (bool acc : {false, true}) {
      const int mr = 3, nr = 2;
      const int64_t kc = 37, k = kc;
      std::vector<float> w(size_t(nr * k * P)), x(size_t(mr * kc)), bias(size_t(nr * P)), res(size_t(mr * nr * P)),
          y(size_t(mr * nr * P));
      for (auto* v : {&w, &x, &bias, &res, &y})
        for (auto& f : *v) f = nd(rng);
      const std::vector<float> y0 = y;
      jit::GemmArgs a;
      a.w = reinterpret_cast<const uint8_t*>(w.data());
      a.w2 = reinterpret_cast<const uint8_t*>(bias.data());
      a.x = x.data(), a.ldx = kc * 4;
      a.y = y.data(), a.ldy = nr * P * 4;
      a.r = res.data(), a.ldr = nr * P * 4;
      const jit::KernelSpec s = jit::dense_spec(isa, TensorType::F32, mr, nr, kc, k, acc, ep);
      CAPTURE(s.to_string());
      jit::reference_dense(s, &a);
      for (int i = 0; i < mr; ++i)
        for (int c = 0; c < nr * P; ++c) {
          // Panel layout (jit/reference_dense.cpp): column c's k-th weight at panel c / P, row k, lane c % P.
          double exact = acc ? double(y0[size_t(i * nr * P + c)]) : 0.0, mag = std::fabs(exact);
          for (int64_t kk = 0; kk < kc; ++kk) {
            const double p = double(x[size_t(i * kc + kk)]) * double(w[size_t((c / P) * k * P + kk * P + c % P)]);
            exact += p, mag += std::fabs(p);
          }
          if (ep != Epilogue::Store) exact += bias[size_t(c)], mag += std::fabs(bias[size_t(c)]);
          if (ep == Epilogue::BiasResidual) exact += res[size_t(i * nr * P + c)], mag += std::fabs(res[size_t(i * nr * P + c)]);
          const double got = y[size_t(i * nr * P + c)];
          // kc + 3 roundings at most, each within half an ulp of a partial sum no larger than mag.
          CHECK_MESSAGE(std::fabs(got - exact) <= double(kc + 3) * 0.5 * 1.2e-7 * mag,
                        "row " << i << " col " << c << ": " << got << " vs " << exact);
          ++checked;
        }
    }
  CHECK(checked == 6 * 3 * 2 * P);
}

}  // TEST_SUITE
