// The vision tower's building blocks: the op=dense JIT kernel against its scalar twin (bit for
// bit), DenseLinear against a plain loop in the documented float order (any threads, tiling, K
// blocks, column tails), the tiled attention against a double-precision softmax, and the ops.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "topology/workers.h"
#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "jit/reference.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "vision/dense_linear.h"
#include "vision/vision_ops.h"
#include "skip.h"

using namespace ckjit;

namespace {

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(g);
  return v;
}

bool same_bits(const float* a, const float* b, size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

}  // namespace

TEST_SUITE("vision") {

// Every type / block / epilogue of one op=dense path against its scalar twin; the count checked.
int check_dense_path(jit::IsaPath isa, int max_mr, int max_nr) {
  using jit::Epilogue;
  const int P = jit::panel_cols(isa);
  int checked = 0;
  for (TensorType wt : {TensorType::F16, TensorType::BF16, TensorType::F32})
    for (int64_t kc : {1, 5, 64})
      for (int mr = 1; mr <= max_mr; ++mr)
        for (int nr = 1; nr <= max_nr; ++nr)
          for (bool acc : {false, true})
            if (jit::dense_block_problem(isa, mr, nr).empty())  // blocks that fit the registers
            for (Epilogue ep : {Epilogue::Store, Epilogue::Bias, Epilogue::BiasResidual}) {
              const int64_t k = kc + 3;  // the panel stride is the whole K
              const int es = wt == TensorType::F32 ? 4 : 2;
              std::vector<uint8_t> w(size_t(nr * k * P * es));
              const auto wf = randn(w.size() / size_t(es), 7u + uint32_t(kc));
              for (size_t i = 0; i < wf.size(); ++i) {
                if (wt == TensorType::F32) std::memcpy(w.data() + 4 * i, &wf[i], 4);
                else {
                  const uint16_t h = wt == TensorType::F16 ? quant::f32_to_f16(wf[i]) : quant::f32_to_bf16(wf[i]);
                  std::memcpy(w.data() + 2 * i, &h, 2);
                }
              }
              const int64_t ldx = kc + 2, ld = nr * P + 5;
              const auto x = randn(size_t(mr * ldx), 11);
              const auto bias = randn(size_t(nr * P), 12);
              const auto res = randn(size_t(mr * ld), 13);
              const auto y0 = randn(size_t(mr * ld), 14);
              std::vector<float> yj = y0, yr = y0;
              jit::GemmArgs a;
              a.w = w.data(), a.w2 = reinterpret_cast<const uint8_t*>(bias.data()), a.x = x.data(), a.ldx = ldx * 4;
              a.r = res.data(), a.ldr = ld * 4, a.ldy = ld * 4;
              const jit::KernelSpec s = jit::dense_spec(isa, wt, mr, nr, kc, k, acc, ep);
              CAPTURE(s.to_string());
              CHECK(jit::KernelSpec::parse(s.to_string()) == s);
              const auto& kern = jit::global_code_cache().get(s);
              a.y = yj.data();
              kern.as<jit::GemmFn>()(&a);
              a.y = yr.data();
              jit::reference_dense(s, &a);
              REQUIRE(same_bits(yj.data(), yr.data(), yj.size()));
              ++checked;
            }
  return checked;
}

TEST_CASE("op=dense kernel avx2: bit-identical to its scalar twin for every type / block / epilogue") {
  CHECK(check_dense_path(jit::IsaPath::Avx2, 4, 3) == 3 * 3 * 4 * 3 * 2 * 3);
}

TEST_CASE("op=dense kernel avx512: bit-identical to its scalar twin for every type / block / epilogue") {
  if (!jit::isa_runs(jit::IsaPath::Avx512, jit::runtime_isa())) CKJIT_SKIP("the avx512 path cannot run here");
  // Blocks of up to 12 rows with mr*nr + nr + 1 <= 32 zmm: 12 + 12 + 9 + 6 for nr = 1..4.
  CHECK(check_dense_path(jit::IsaPath::Avx512, 12, 4) == 3 * 3 * 39 * 2 * 3);
}

TEST_CASE("op=dense specs: bad blocks and types are refused") {
  auto bad = [](const char* text) { CHECK_THROWS_AS(jit::KernelSpec::parse(text), Error); };
  bad("op=dense,w=f16,a=f32,isa=avx2,mr=4,nr=4,kc=8,k=8,ep=store");     // 21 registers
  bad("op=dense,w=q4_K,a=f32,isa=avx2,mr=4,nr=3,kc=8,k=8,ep=store");    // not a float weight
  bad("op=dense,w=f16,a=q8_K,isa=avx2,mr=4,nr=3,kc=8,k=8,ep=store");    // not f32 rows
  bad("op=dense,w=f16,a=f32,isa=avxvnni,mr=4,nr=3,kc=8,k=8,ep=store");  // avx2 and avx512 only
  bad("op=dense,w=f16,a=f32,isa=avx512,mr=13,nr=1,kc=8,k=8,ep=store");  // 4 row bases of 3 rows
  bad("op=dense,w=f16,a=f32,isa=avx512,mr=8,nr=4,kc=8,k=8,ep=store");   // 37 registers
  CHECK_NOTHROW(jit::KernelSpec::parse("op=dense,w=f16,a=f32,isa=avx512,mr=6,nr=4,kc=8,k=8,ep=store"));
  CHECK_NOTHROW(jit::KernelSpec::parse("op=dense,w=f16,a=f32,isa=avx512,mr=8,nr=3,kc=8,k=8,ep=store"));
  CHECK_NOTHROW(jit::KernelSpec::parse("op=dense,w=f16,a=f32,isa=avx512,mr=12,nr=2,kc=8,k=8,ep=store"));
  bad("op=dense,w=f16,a=f32,isa=avx2,mr=4,nr=3,kc=9,k=8,ep=store");     // kc > k
  bad("op=dense,w=f16,a=f32,isa=avx2,mr=4,nr=3,kc=8,k=8,ep=swiglu");
  bad("op=gemm,w=q4_K,a=q8_K,isa=avx2,mr=4,nr=1,k=256,acc=1");          // acc is dense-only
}

TEST_CASE("op=dense paths: the widest path follows the ISA and each path's block is the largest it accepts") {
  topo::Isa isa{};
  CHECK_THROWS_AS(jit::widest_dense_path(isa), Error);  // below AVX2
  isa.avx2 = isa.fma = isa.f16c = true;
  CHECK(jit::widest_dense_path(isa) == jit::IsaPath::Avx2);
  isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512vnni = true;
  CHECK(jit::widest_dense_path(isa) == jit::IsaPath::Avx512);
  for (jit::IsaPath path : {jit::IsaPath::Avx2, jit::IsaPath::Avx512}) {
    CAPTURE(jit::isa_name(path));
    const jit::DenseBlock b = jit::dense_block(path);
    CHECK(jit::dense_block_problem(path, b.mr, b.nr) == "");
    CHECK(jit::dense_block_problem(path, b.mr, b.nr + 1) != "");  // nr is at its bound for the mr chosen
  }
  CHECK_THROWS_AS(jit::dense_block(jit::IsaPath::Amx), Error);
}

TEST_CASE("DenseLinear: the documented float order / whatever the threads / tiles / K blocks and column tail") {
  // n = 37 (a partial last panel), k = 1500 (two K blocks of 750), m = 70 (past one 64-row tile).
  const int64_t n = 37, k = 1500, m = 70;
  const auto w = randn(size_t(n * k), 1, 0.05f);
  const auto b = randn(size_t(n), 2);
  const auto x = randn(size_t(m * k), 3);
  const auto r = randn(size_t(m * n), 4);
  const topo::Isa isa = jit::runtime_isa();
  // Packed as F16 too (the mmproj's own type): its 16-bit panels are transposed differently.
  for (const auto& round_packed_ : {std::pair{TensorType::F32, TensorType::F32}, std::pair{TensorType::F16, TensorType::F32},
                                     std::pair{TensorType::F16, TensorType::F16}}) {
    const TensorType round = round_packed_.first, packed = round_packed_.second;
    CAPTURE(int(round));
    CAPTURE(int(packed));
    vision::DenseLinear lin(w, n, k, b, round, isa, 2, packed);
    Workers one(1), two(2);
    std::vector<float> xr(size_t(m * k)), y1(size_t(m * n)), y2(size_t(m * n)), y3(size_t(m * n));
    lin.prepare(one, x.data(), k, m, xr.data());
    lin.matmul(one, xr.data(), m, y1.data(), n, r.data(), n);
    lin.matmul(two, xr.data(), m, y2.data(), n, r.data(), n);
    CHECK(same_bits(y1.data(), y2.data(), y1.size()));
    lin.matmul(two, xr.data(), 5, y3.data(), n, r.data(), n);  // fewer rows: same first rows
    CHECK(same_bits(y1.data(), y3.data(), size_t(5 * n)));
    int wrong = 0;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t c = 0; c < n; ++c) {
        float acc = 0.0f;
        for (int64_t kk = 0; kk < k; ++kk) {
          const float xv = round == TensorType::F16 ? quant::f16_to_f32(quant::f32_to_f16(x[size_t(i * k + kk)])) : x[size_t(i * k + kk)];
          const float wv = w[size_t(c * k + kk)];
          acc = std::fma(xv, packed == TensorType::F16 ? quant::f16_to_f32(quant::f32_to_f16(wv)) : wv, acc);
        }
        acc += b[size_t(c)];
        acc += r[size_t(i * n + c)];
        wrong += std::memcmp(&acc, &y1[size_t(i * n + c)], 4) != 0;
      }
    CHECK(wrong == 0);
  }
}

TEST_CASE("DenseLinear: the avx512 path (16-column panels / 6 x 4 blocks) gives the avx2 path's bits") {
  const topo::Isa isa = jit::runtime_isa();
  if (!jit::isa_runs(jit::IsaPath::Avx512, isa)) CKJIT_SKIP("the avx512 path cannot run here");
  // n = 90: a partial last panel at both widths; k = 2100: K blocks of 700; m = 71: row tails.
  const int64_t n = 90, k = 2100, m = 71;
  const auto w = randn(size_t(n * k), 41, 0.05f), b = randn(size_t(n), 42), x = randn(size_t(m * k), 43);
  const auto r = randn(size_t(m * n), 44);
  for (TensorType packed : {TensorType::F32, TensorType::F16, TensorType::BF16}) {
    CAPTURE(int(packed));
    const vision::DenseLinear wide(w, n, k, b, TensorType::F32, isa, 2, packed);
    const vision::DenseLinear narrow(w, n, k, b, TensorType::F32, topo::cap_isa(isa, "avx2"), 2, packed);
    CHECK(wide.describe().find("dense avx512") != std::string::npos);
    CHECK(narrow.describe().find("dense avx2") != std::string::npos);
    Workers two(2);
    std::vector<float> yw(size_t(m * n)), yn(size_t(m * n));
    wide.matmul(two, x.data(), m, yw.data(), n, r.data(), n);
    narrow.matmul(two, x.data(), m, yn.data(), n, r.data(), n);
    CHECK(same_bits(yw.data(), yn.data(), yw.size()));
  }
}

TEST_CASE("VisionAttention: close to a double-precision softmax / same bits for any thread count") {
  // n = 301 patches (padded keys, a short last key block, a partial query tile), 3 heads of 72.
  const int64_t n = 301, H = 3, dh = 72, C = H * dh, ld = 3 * C + 4;
  auto qkv = randn(size_t(n * ld), 21, 0.5f);
  const topo::Isa isa = jit::runtime_isa();
  const vision::VisionAttention att(n, H, dh, 2, isa);
  Workers one(1), two(2);
  std::vector<float> in1 = qkv, in2 = qkv, o1(size_t(n * C)), o2(size_t(n * C));
  att.run(one, in1.data(), ld, o1.data(), C);
  att.run(two, in2.data(), ld, o2.data(), C);
  CHECK(same_bits(o1.data(), o2.data(), o1.size()));
  // The avx2 path's 8-wide panels give the same bits as the widest path's (16 on AVX-512).
  const vision::VisionAttention narrow(n, H, dh, 2, topo::cap_isa(isa, "avx2"));
  std::vector<float> in3 = qkv, o3(size_t(n * C));
  narrow.run(two, in3.data(), ld, o3.data(), C);
  CHECK(same_bits(o1.data(), o3.data(), o1.size()));
  // Reference on the f16-rounded inputs (what the op documents it multiplies).
  double worst = 0;
  for (auto& v : qkv) v = quant::f16_to_f32(quant::f32_to_f16(v));
  for (int64_t h = 0; h < H; ++h)
    for (int64_t i = 0; i < n; i += 7) {
      std::vector<double> s(static_cast<size_t>(n));
      double mx = -1e300;
      for (int64_t j = 0; j < n; ++j) {
        double d = 0;
        for (int64_t e = 0; e < dh; ++e) d += double(qkv[size_t(i * ld + h * dh + e)]) * qkv[size_t(j * ld + C + h * dh + e)];
        s[size_t(j)] = d / std::sqrt(double(dh));
        mx = std::max(mx, s[size_t(j)]);
      }
      double z = 0;
      for (auto& v : s) z += (v = std::exp(v - mx));
      for (int64_t e = 0; e < dh; ++e) {
        double o = 0;
        for (int64_t j = 0; j < n; ++j) o += s[size_t(j)] * qkv[size_t(j * ld + 2 * C + h * dh + e)];
        worst = std::max(worst, std::fabs(o / z - o1[size_t(i * C + h * dh + e)]));
      }
    }
  MESSAGE("attention vs double reference: max |diff| " << worst);
  CHECK(worst < 2e-5);
}

TEST_CASE("vision ops: LayerNorm / GELU table / 2D RoPE / merge order") {
  Workers pool(2);
  const int64_t n = 100;
  auto x = randn(size_t(3 * n), 31, 3.0f);
  const auto w = randn(size_t(n), 32), b = randn(size_t(n), 33);
  std::vector<float> y(x.size());
  vision::layer_norm_rows(pool, x.data(), n, y.data(), n, 3, n, w.data(), b.data(), 1e-6f);
  for (int64_t r = 0; r < 3; ++r) {
    double mean = 0, var = 0;
    for (int64_t i = 0; i < n; ++i) mean += x[size_t(r * n + i)];
    mean /= n;
    for (int64_t i = 0; i < n; ++i) var += (x[size_t(r * n + i)] - mean) * (x[size_t(r * n + i)] - mean);
    var /= n;
    for (int64_t i = 0; i < n; ++i) {
      const double ref = (x[size_t(r * n + i)] - mean) / std::sqrt(var + 1e-6) * w[size_t(i)] + b[size_t(i)];
      REQUIRE(std::fabs(ref - y[size_t(r * n + i)]) < 1e-4 * (1 + std::fabs(ref)));
    }
  }
  const vision::GeluTable gelu(jit::runtime_isa());
  CHECK(gelu(0.0f) == 0.0f);
  CHECK(gelu(12.5f) == 12.5f);
  CHECK(gelu(-11.0f) == 0.0f);
  std::vector<float> g = {-3.0f, -0.5f, 0.25f, 1.0f, 2.0f, 9.0f, -9.0f, 0.0f, 4.0f};
  const std::vector<float> g0 = g;
  gelu.apply(pool, g.data(), int64_t(g.size()), 1, int64_t(g.size()));
  for (size_t i = 0; i < g.size(); ++i) {
    const double v = g0[i], ref = 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
    CHECK(std::fabs(ref - g[i]) <= 2e-3 * (1 + std::fabs(ref)));  // f16 table precision
    CHECK(g[i] == gelu(g0[i]));                                     // vector and scalar paths agree
  }
  // Merge order: 2 x 2 blocks in raster order.
  CHECK(vision::merge_index(0, 0, 4) == 0);
  CHECK(vision::merge_index(0, 1, 4) == 1);
  CHECK(vision::merge_index(1, 0, 4) == 2);
  CHECK(vision::merge_index(1, 1, 4) == 3);
  CHECK(vision::merge_index(0, 2, 4) == 4);
  CHECK(vision::merge_index(2, 0, 4) == 8);
  // RoPE: patch (0, 0) is untouched; rotation keeps each pair's length; rows use the first
  // quarter of the pairs, columns the second.
  const int64_t dh = 16;
  const vision::Rope2d rope(2, 4, dh);
  auto v = randn(size_t(8 * dh), 41);
  const auto v0 = v;
  rope.apply(pool, v.data(), dh, 1);
  CHECK(same_bits(v.data(), v0.data(), size_t(dh)));
  for (int64_t s = 0; s < 8; ++s)
    for (int64_t j = 0; j < dh / 2; ++j) {
      const double a = std::hypot(v0[size_t(s * dh + j)], v0[size_t(s * dh + j + dh / 2)]);
      const double c = std::hypot(v[size_t(s * dh + j)], v[size_t(s * dh + j + dh / 2)]);
      REQUIRE(std::fabs(a - c) < 1e-5 * (1 + a));
    }
  const int64_t s01 = vision::merge_index(0, 1, 4);  // row 0, col 1: only the column quarter turns
  for (int64_t j = 0; j < dh / 4; ++j) CHECK(v[size_t(s01 * dh + j)] == v0[size_t(s01 * dh + j)]);
  CHECK(v[size_t(s01 * dh + dh / 4)] != v0[size_t(s01 * dh + dh / 4)]);
}

}  // TEST_SUITE
