// Int8Linear, the vision tower's int8 matmul (--vision-precision int8): against a plain loop in its
// documented order (Q8_0 activation rows as llama.cpp's x86 quantize_row_q8_0 makes them, exact
// int32 block sums, acc = fma(float(isum), dw * dx, acc) over blocks, + bias, + residual), for any
// thread count and row count, from a Q8_0 tensor and from an F16 one (quantized at load); and
// each faster path (amx, avx512, avxvnni) against the avx2 floor's bits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jit/isa_select.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "topology/workers.h"
#include "vision/int8_linear.h"
#include "skip.h"
#include "vision_test_matrix.h"

using namespace ckjit;

namespace {

using test::randn;

// A VisionMatrix with its weight rows as Q8_0 blocks (a Q8_0 tensor's own; a float one quantized as at load).
struct Matrix : test::VisionMatrix {
  using VisionMatrix::VisionMatrix;
  std::vector<quant::BlockQ8_0> q8_row(int64_t r) const {
    const int64_t k = w.ne[0];
    const uint8_t* row = w.data + r * int64_t(w.row_bytes());
    std::vector<quant::BlockQ8_0> q(size_t(k / 32));
    if (w.type.type == TensorType::Q8_0) {
      std::memcpy(q.data(), row, q.size() * sizeof(q[0]));
    } else {
      const std::vector<float> f = row_f32(r);
      quant::quantize_row(TensorType::Q8_0, f.data(), q.data(), k);
    }
    return q;
  }
};

using test::same_bits;

std::vector<float> run(const vision::Int8Linear& lin, const std::vector<float>& x, const std::vector<float>* r, int64_t m, int threads) {
  return test::run_linear(lin, x, r, m, threads);
}

}  // namespace

TEST_SUITE("vision") {

TEST_CASE("Int8Linear: the documented order / from Q8_0 and F16 tensors / whatever the threads and rows") {
  // n = 37 (a partial last panel at both widths), k = 320 (10 blocks), m = 70 (past one 64-row chunk).
  const int64_t n = 37, k = 320, m = 70;
  const auto x = randn(size_t(m * k), 3), r = randn(size_t(m * n), 4);
  for (TensorType type : {TensorType::Q8_0, TensorType::F16}) {
    CAPTURE(std::string(tensor_type_info(type).name));
    const Matrix mat(type, n, k, 10);
    const vision::Int8Linear lin(mat.w, mat.b, jit::runtime_isa(), 2);
    CHECK(lin.describe().find("int8") != std::string::npos);
    const auto y1 = run(lin, x, &r, m, 1), y2 = run(lin, x, &r, m, 2), yb = run(lin, x, nullptr, m, 2);
    CHECK(same_bits(y1, y2));
    const auto y5 = run(lin, std::vector<float>(x.begin(), x.begin() + 5 * k), &r, 5, 2);
    CHECK(std::memcmp(y5.data(), y1.data(), size_t(5 * n) * 4) == 0);
    int wrong = 0;
    double worst = 0.0;
    for (int64_t i = 0; i < m; ++i) {
      std::vector<quant::BlockQ8_0> xq(size_t(k / 32));
      quant::quantize_row_q8_0_x86(x.data() + i * k, xq.data(), k);
      for (int64_t c = 0; c < n; ++c) {
        const auto wq = mat.q8_row(c);
        float acc = 0.0f;
        double exact = 0.0;
        for (int64_t b = 0; b < k / 32; ++b) {
          int32_t isum = 0;
          for (int e = 0; e < 32; ++e) isum += int32_t(wq[size_t(b)].qs[e]) * int32_t(xq[size_t(b)].qs[e]);
          acc = std::fma(float(isum), quant::f16_to_f32(wq[size_t(b)].d) * quant::f16_to_f32(xq[size_t(b)].d), acc);
        }
        acc += mat.bias[size_t(c)];
        const float with_r = acc + r[size_t(i * n + c)];
        wrong += std::memcmp(&with_r, &y1[size_t(i * n + c)], 4) != 0;
        wrong += std::memcmp(&acc, &yb[size_t(i * n + c)], 4) != 0;
        // And it is the float product within Q8_0's error (a wrong block or column would not be).
        std::vector<float> wf(static_cast<size_t>(k));
        quant::dequantize_row(type, mat.w.data + c * int64_t(mat.w.row_bytes()), wf.data(), k);
        for (int64_t kk = 0; kk < k; ++kk) exact += double(wf[size_t(kk)]) * double(x[size_t(i * k + kk)]);
        exact += mat.bias[size_t(c)];
        worst = std::max(worst, std::fabs(double(acc) - exact));
      }
    }
    CHECK(wrong == 0);
    // Q8_0 keeps ~0.4% of each value: about 0.005 here (|y| ~ 1); a wrong block or column is ~1.
    MESSAGE("Int8Linear " << std::string(tensor_type_info(type).name) << ": worst |y - float product| " << worst);
    CHECK(worst < 0.05);
  }
}

TEST_CASE("Int8Linear: bad shapes and types are refused") {
  const Matrix odd(TensorType::F32, 8, 48, 20);  // k = 48: not whole Q8_0 blocks
  CHECK_FALSE(vision::Int8Linear::supports(odd.w));
  CHECK_THROWS_AS(vision::Int8Linear(odd.w, odd.b, jit::runtime_isa(), 1), Error);
  Matrix q4(TensorType::Q4_K, 8, 256, 21);
  CHECK_THROWS_AS(vision::Int8Linear(q4.w, q4.b, jit::runtime_isa(), 1), Error);
  Matrix bad_bias(TensorType::Q8_0, 8, 64, 22);
  bad_bias.b.ne = {7, 1, 1, 1}, bad_bias.b.n_elements = 7;
  CHECK_THROWS_AS(vision::Int8Linear(bad_bias.w, bad_bias.b, jit::runtime_isa(), 1), Error);
}

// Each faster path gives the avx2 floor's bits (the same int32 sums and float order).
void check_path_against_avx2(const char* cap, const char* path) {
  const int64_t n = 90, k = 1024, m = 71;
  const auto x = randn(size_t(m * k), 43), r = randn(size_t(m * n), 44);
  const Matrix mat(TensorType::Q8_0, n, k, 45);
  const topo::Isa isa = jit::runtime_isa();
  const vision::Int8Linear fast(mat.w, mat.b, topo::cap_isa(isa, cap), 2), floor(mat.w, mat.b, topo::cap_isa(isa, "avx2"), 2);
  CHECK(fast.describe().find(std::string("int8 ") + path) != std::string::npos);
  CHECK(floor.describe().find("int8 avx2") != std::string::npos);
  CHECK(same_bits(run(fast, x, &r, m, 2), run(floor, x, &r, m, 2)));
  CHECK(same_bits(run(fast, x, &r, 3, 2), run(floor, x, &r, 3, 2)));  // fewer rows than an AMX tile
}

TEST_CASE("Int8Linear: the amx path gives the avx2 path's bits") {
  if (!jit::isa_runs(jit::IsaPath::Amx, jit::runtime_isa())) CKJIT_SKIP("the amx path cannot run here");
  check_path_against_avx2("amx", "amx");
}

TEST_CASE("Int8Linear: the avx512 path gives the avx2 path's bits") {
  if (!jit::isa_runs(jit::IsaPath::Avx512, jit::runtime_isa())) CKJIT_SKIP("the avx512 path cannot run here");
  check_path_against_avx2("avx512", "avx512");
}

TEST_CASE("Int8Linear: the avxvnni path gives the avx2 path's bits") {
  if (!jit::isa_runs(jit::IsaPath::AvxVnni, jit::runtime_isa())) CKJIT_SKIP("the avxvnni path cannot run here");
  check_path_against_avx2("avxvnni", "avxvnni");
}

}  // TEST_SUITE
