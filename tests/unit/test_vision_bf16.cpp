// AmxBf16Linear, the vision tower's AMX-BF16 matmul (--vision-precision bf16 where AMX-BF16 is
// granted): within bf16's rounding of the exact product of the bf16-rounded operands (tdpbf16ps sums
// in an order Intel does not specify, so no loop gives its bits); the same bits for any thread count
// and row count (each output depends only on its row and column); close to its FMA twin (the
// scalar-twin executor); bad shapes refused.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "jit/executor.h"
#include "jit/isa_select.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "topology/workers.h"
#include "vision/amx_bf16_attention.h"
#include "vision/amx_bf16_linear.h"
#include "skip.h"
#include "vision_test_matrix.h"

using namespace ckjit;

namespace {

using test::same_bits;

std::vector<float> run(const vision::AmxBf16Linear& lin, const std::vector<float>& x, const std::vector<float>* r, int64_t m, int threads) {
  return test::run_linear(lin, x, r, m, threads);
}

float bf16(float v) { return quant::bf16_to_f32(quant::f32_to_bf16(v)); }

bool amx_bf16_here() {
  test::VisionMatrix probe(TensorType::F16, 1, 32, 1);
  return vision::AmxBf16Linear::runs(probe.w, jit::runtime_isa());
}

}  // namespace

TEST_SUITE("vision") {

TEST_CASE("AmxBf16Linear: the bf16 product within its rounding / the same bits for any threads and rows") {
  if (!amx_bf16_here()) CKJIT_SKIP("AMX-BF16 cannot run here");
  // n = 70 (a partial last 32-column pair), k = 320 (10 tile steps), m = 70 (a partial 32-row block).
  const int64_t n = 70, k = 320, m = 70;
  const auto x = test::randn(size_t(m * k), 3), r = test::randn(size_t(m * n), 4);
  for (TensorType type : {TensorType::F16, TensorType::F32, TensorType::Q8_0}) {
    CAPTURE(std::string(tensor_type_info(type).name));
    const test::VisionMatrix mat(type, n, k, 10);
    const vision::AmxBf16Linear lin(mat.w, mat.b, jit::runtime_isa(), 2);
    CHECK(lin.describe().find("bf16 amx") != std::string::npos);
    const auto y1 = run(lin, x, &r, m, 1), y2 = run(lin, x, &r, m, 2), y3 = run(lin, x, &r, m, 3);
    const auto yb = run(lin, x, nullptr, m, 2);
    CHECK(same_bits(y1, y2));
    CHECK(same_bits(y1, y3));
    const auto y5 = run(lin, std::vector<float>(x.begin(), x.begin() + 5 * k), &r, 5, 2);
    CHECK(std::memcmp(y5.data(), y1.data(), size_t(5 * n) * 4) == 0);
    // Against the exact sum of the bf16 products: f32 accumulation of 320 terms leaves ~1e-6 of
    // sum |x w|; a wrong tile, pair or K step is ~1e-1.
    double worst = 0.0;
    int residual_wrong = 0;
    for (int64_t c = 0; c < n; ++c) {
      const std::vector<float> w = mat.row_f32(c);
      for (int64_t i = 0; i < m; ++i) {
        double exact = 0.0, mag = 0.0;
        for (int64_t kk = 0; kk < k; ++kk) {
          const double p = double(bf16(x[size_t(i * k + kk)])) * double(bf16(w[size_t(kk)]));
          exact += p, mag += std::fabs(p);
        }
        const double want = exact + mat.bias[size_t(c)];
        worst = std::max(worst, std::fabs(double(yb[size_t(i * n + c)]) - want) / (mag + 1e-30));
        // The residual is added after the bias, in f32.
        const float with_r = yb[size_t(i * n + c)] + r[size_t(i * n + c)];
        residual_wrong += std::memcmp(&with_r, &y1[size_t(i * n + c)], 4) != 0;
      }
    }
    MESSAGE("AmxBf16Linear " << std::string(tensor_type_info(type).name) << ": worst |y - exact| / sum|x w| " << worst);
    CHECK(worst < 1e-5);
    CHECK(residual_wrong == 0);
  }
}

TEST_CASE("AmxBf16Linear: its scalar twin (an FMA chain over the same bf16 values) agrees within bf16 rounding") {
  if (!amx_bf16_here()) CKJIT_SKIP("AMX-BF16 cannot run here");
  const int64_t n = 64, k = 1024, m = 33;
  const auto x = test::randn(size_t(m * k), 31);
  const test::VisionMatrix mat(TensorType::F16, n, k, 32);
  const vision::AmxBf16Linear lin(mat.w, mat.b, jit::runtime_isa(), 2);
  const auto fast = run(lin, x, nullptr, m, 2);
  jit::set_executor(jit::Executor::scalar_twins);
  const auto twin = run(lin, x, nullptr, m, 2);
  jit::set_executor(jit::Executor::generated);
  double worst = 0.0;
  int differ = 0;
  for (size_t i = 0; i < fast.size(); ++i) {
    worst = std::max(worst, double(std::fabs(fast[i] - twin[i])) / (std::fabs(double(twin[i])) + 1.0));
    differ += fast[i] != twin[i];
  }
  MESSAGE("AmxBf16Linear against its twin: " << differ << " of " << fast.size() << " outputs differ, worst " << worst);
  CHECK(worst < 1e-5);
}

TEST_CASE("AmxBf16Linear: shapes it cannot take are refused") {
  const test::VisionMatrix odd(TensorType::F32, 8, 48, 20);  // k = 48: not whole 32-element steps
  CHECK_FALSE(vision::AmxBf16Linear::runs(odd.w, jit::runtime_isa()));
  CHECK_THROWS_AS(vision::AmxBf16Linear(odd.w, odd.b, jit::runtime_isa(), 1), Error);
  // Below AMX (a capped ISA) it does not run either: the bf16 mode then takes the FMA path.
  const test::VisionMatrix ok(TensorType::F16, 8, 64, 21);
  CHECK_FALSE(vision::AmxBf16Linear::runs(ok.w, topo::cap_isa(jit::runtime_isa(), "avx512")));
  CHECK_THROWS_AS(vision::AmxBf16Linear(ok.w, ok.b, topo::cap_isa(jit::runtime_isa(), "avx512"), 1), Error);
}

}  // TEST_SUITE

TEST_SUITE("vision") {

// AmxBf16Attention against attention in double over the same bf16-rounded q, k, v: the scores'
// f32 sums, the bf16 weights P and the f32 sums of P V leave ~1e-3 of an output's scale
// (P in bf16 keeps 8 bits); a wrong key, head, dim or tile row is off by its whole size. Odd
// shapes: 70 patches (a partial query tile and key pair), head_dim 48 (padded to 64), 3 heads.
TEST_CASE("AmxBf16Attention: close to exact attention over the bf16 values / the same bits for any threads") {
  if (!vision::AmxBf16Attention::runs(jit::runtime_isa())) CKJIT_SKIP("AMX-BF16 cannot run here");
  const int64_t n = 70, H = 3, dh = 48, C = H * dh, ld = 3 * C;
  const auto qkv = test::randn(size_t(n * ld), 77);
  auto run_att = [&](int threads) {
    Workers pool(threads);
    const vision::AmxBf16Attention att(n, H, dh, threads, jit::runtime_isa());
    std::vector<float> out(size_t(n * C), -7.0f);
    att.run(pool, qkv.data(), ld, out.data(), C);
    return out;
  };
  const auto o1 = run_att(1), o2 = run_att(2), o3 = run_att(3);
  CHECK(same_bits(o1, o2));
  CHECK(same_bits(o1, o3));
  double worst = 0.0;
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < n; ++i) {
      std::vector<double> s(static_cast<size_t>(n));
      double mx = -1e300, sum = 0.0;
      for (int64_t j = 0; j < n; ++j) {
        double d = 0.0;
        for (int64_t e = 0; e < dh; ++e)
          d += double(bf16(qkv[size_t(i * ld + h * dh + e)])) * double(bf16(qkv[size_t(j * ld + C + h * dh + e)]));
        s[size_t(j)] = d / std::sqrt(double(dh));
        mx = std::max(mx, s[size_t(j)]);
      }
      for (auto& v : s) sum += (v = std::exp(v - mx));
      for (int64_t e = 0; e < dh; ++e) {
        double o = 0.0;
        for (int64_t j = 0; j < n; ++j) o += s[size_t(j)] * double(bf16(qkv[size_t(j * ld + 2 * C + h * dh + e)]));
        worst = std::max(worst, std::fabs(o / sum - double(o1[size_t(i * C + h * dh + e)])));
      }
    }
  MESSAGE("AmxBf16Attention: worst |out - exact| " << worst << " (values ~1)");
  CHECK(worst < 5e-3);
}

TEST_CASE("AmxBf16Attention: refused where AMX-BF16 does not run") {
  const topo::Isa capped = topo::cap_isa(jit::runtime_isa(), "avx512");
  CHECK_FALSE(vision::AmxBf16Attention::runs(capped));
  CHECK_THROWS_AS(vision::AmxBf16Attention(64, 2, 64, 1, capped), Error);
}

}  // TEST_SUITE
