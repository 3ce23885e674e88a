// JIT framework and matmul kernels: spec round trip, W^X code pages, lossless repack, and every
// generated kernel against its scalar twin (bit-exact) on odd shapes.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <vector>

#include <unistd.h>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "jit/reference.h"
#include "jit/repack_full.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "tests/unit/jit_matmul_check.h"
#include "tests/unit/skip.h"

using namespace ckjit;
using namespace ckjit::jit;
using namespace ckjit::test;
using quant::BlockQ4_K;
using quant::BlockQ8_K;

namespace {
bool avx512_runs() { return isa_runs(IsaPath::Avx512, runtime_isa()); }
bool avx2_runs() { return isa_runs(IsaPath::Avx2, runtime_isa()); }

// The Q4_K GEMM kernel of `isa` against llama.cpp's repacked gemv (same float order: bit-exact).
void check_repacked_gemv_order(IsaPath isa) {
  const int64_t m = 3, n = 21, k = 1024, nb = k / 256;
  auto wq = random_q4k(n, k, 31);
  auto x = random_q8k(m, k, 32);
  PackedWeights w = repack_q4_K(wq.data(), n, k, panel_cols(isa), 1);
  std::vector<float> y(size_t(m * n));
  MatmulOperands op;
  op.w = &w;
  op.x = x.data();
  op.ldx = nb * int64_t(sizeof(BlockQ8_K));
  op.y = y.data();
  op.ldy = n * 4;
  run_tile(global_code_cache().get(q4k_spec(Op::Gemm, 2, 1, k, Epilogue::Store, isa)), op, {0, m, 0, n});
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = 0; c < n; ++c) {
      float want = quant::vec_dot_q4_K_q8_K_repack_gemv(wq.data() + c * nb, x.data() + r * nb, k);
      CHECK_MESSAGE(std::memcmp(&y[size_t(r * n + c)], &want, 4) == 0, isa_name(isa) << " row " << r << " col " << c);
    }
}
}  // namespace

TEST_SUITE("jit") {
  TEST_CASE("kernel spec round-trips through its text form and rejects bad specs") {
    KernelSpec s = q4k_spec(Op::SwiGLU, 6, 2, 4096, Epilogue::SwiGLU);
    s.m_min = 2;
    s.kc = 4;
    s.pf = 2;
    KernelSpec p = KernelSpec::parse(s.to_string());
    CHECK(p == s);
    CHECK(p.to_string() == s.to_string());
    CHECK(KernelSpec::parse("op=gemm,k=256").k == 256);
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,k=300"), Error);
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,k=256,color=red"), Error);
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,k=256,w=q4_K,a=q8_0"), Error);
    CHECK_THROWS_AS(KernelSpec::parse("op=swiglu,k=256,nr=3,ep=swiglu"), Error);
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,k=256,mr=x"), Error);
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,k=256,pf=100"), Error);
    CHECK_THROWS_AS(KernelSpec::parse(""), Error);
  }

  TEST_CASE("Q4_K repack is lossless for 16- and 8-row panels") {
    for (int panel : {16, 8}) {
      for (int64_t n : {1, 37, 64}) {
        auto src = random_q4k(n, 512, uint32_t(n * panel));
        PackedWeights w = repack_q4_K(src.data(), n, 512, panel, 3);
        std::vector<BlockQ4_K> back(src.size());
        unpack_q4_K(w, back.data());
        CHECK(std::memcmp(back.data(), src.data(), src.size() * sizeof(BlockQ4_K)) == 0);
      }
    }
    std::vector<BlockQ4_K> one(1);
    CHECK_THROWS_AS(repack_q4_K(one.data(), 1, 300, 16, 1), Error);
    CHECK_THROWS_AS(repack_q4_K(one.data(), 1, 256, 12, 1), Error);
  }

  TEST_CASE("the SIMD repacks write the scalar walk's bytes / padding and partial panels included") {
    // Without a full-panel packer here both sides would be the row walk: nothing compared.
    if (!detail::full_packers()) CKJIT_SKIP("no full-panel repack for this CPU (jit/repack_full.h)");
    MESSAGE("full-panel packer: " << detail::full_packers()->name);
    auto same = [](const PackedWeights& a, const PackedWeights& b) {
      return a.bytes() == b.bytes() && std::memcmp(a.data.get(), b.data.get(), size_t(a.bytes())) == 0;
    };
    for (int panel : {16, 8})
      for (int64_t n : {8, 16, 37, 64}) {
        const uint32_t seed = uint32_t(n * panel);
        auto q4 = random_q4k(n, 512, seed);
        CHECK(same(repack_q4_K(q4.data(), n, 512, panel, 2), repack_q4_K(q4.data(), n, 512, panel, 1, false)));
        auto q6 = random_q6k(n, 512, seed);
        CHECK(same(repack_q6_K(q6.data(), n, 512, panel, 2), repack_q6_K(q6.data(), n, 512, panel, 1, false)));
        auto q8 = random_q80(n, 96, seed);
        CHECK(same(repack_q8_0(q8.data(), n, 96, panel, 2), repack_q8_0(q8.data(), n, 96, panel, 1, false)));
      }
  }

  TEST_CASE("packed integer partial sums equal those of the original blocks") {
    auto wq = random_q4k(5, 256, 11);
    auto x = random_q8k(1, 256, 12);
    PackedWeights w = repack_q4_K(wq.data(), 5, 256, 16, 1);
    for (int l = 0; l < 5; ++l) {
      const BlockQ4_K& b = wq[size_t(l)];
      uint8_t sc[8], mn[8];
      quant::unpack_k4_scales(b.scales, sc, mn);
      int32_t S = 0, M = 0;
      for (int e = 0; e < 256; ++e) {
        int c = e / 64, r = e % 64;
        int q = r < 32 ? (b.qs[32 * c + r] & 15) : (b.qs[32 * c + r - 32] >> 4);
        S += sc[e / 32] * q * x[0].qs[e];
      }
      for (int g = 0; g < 16; ++g) M += mn[g / 2] * x[0].bsums[g];
      Q4KPartials p = q4k_partials(w.panel_ptr(0), l, 16, &x[0]);
      CHECK(p.S == S);
      CHECK(p.M == M);
      // Same value as llama.cpp's AVX2 vec_dot within float reordering noise.
      GemmArgs a;
      float y = 0;
      a.w = w.panel_ptr(0);
      a.x = x.data();
      a.y = &y;
      a.m = 1;
      a.n = 1;
      PackedWeights wl = repack_q4_K(&b, 1, 256, 16, 1);
      a.w = wl.panel_ptr(0);
      reference_kernel(q4k_spec(Op::Gemm, 1, 1, 256), &a);
      float v = quant::vec_dot_q4_K_q8_K(&b, x.data(), 256);
      CHECK(std::fabs(y - v) <= 1e-5f * (1.0f + std::fabs(v)));
    }
  }

  TEST_CASE("generated code pages are never writable and executable at once") {
    const auto& k = global_code_cache().get(q4k_spec(Op::Gemm, 2, 2, 256));
    CHECK(k.size() > 0);
    std::ifstream maps("/proc/self/maps");
    std::string line;
    bool found = false;
    auto addr = reinterpret_cast<uintptr_t>(k.entry());
    while (std::getline(maps, line)) {
      std::istringstream in(line);
      std::string range, perms;
      in >> range >> perms;
      CHECK_MESSAGE(!(perms[1] == 'w' && perms[2] == 'x'), line);
      auto dash = range.find('-');
      uintptr_t lo = std::stoull(range.substr(0, dash), nullptr, 16), hi = std::stoull(range.substr(dash + 1), nullptr, 16);
      if (addr >= lo && addr < hi) {
        found = true;
        CHECK(perms.substr(0, 3) == "r-x");
      }
    }
    CHECK(found);
    CHECK(&global_code_cache().get(q4k_spec(Op::Gemm, 2, 2, 256)) == &k);  // cached
  }

  TEST_CASE("the code cache is bounded: a kernel past the bound is a clear error and the cache still serves what it holds") {
    CodeCache cache;
    CHECK(cache.limit_bytes() >= (size_t(64) << 20));
    const auto& a = cache.get(q4k_spec(Op::Gemm, 2, 2, 256));
    CHECK(cache.code_bytes() >= a.size());
    cache.set_limit_bytes(cache.code_bytes());  // full
    CHECK_THROWS_WITH_AS(cache.get(q4k_spec(Op::Gemm, 2, 2, 512)), doctest::Contains("JIT code cache full"), Error);
    CHECK(&cache.get(q4k_spec(Op::Gemm, 2, 2, 256)) == &a);
    CHECK(cache.size() == 1);
  }

  TEST_CASE("CKJIT_PERF_MAP lists each generated kernel for perf with its address size and spec") {
    setenv("CKJIT_PERF_MAP", "1", 1);
    const KernelSpec spec = q4k_spec(Op::Gemv, 1, 3, 768);  // a spec no other test emits
    const auto& k = global_code_cache().get(spec);
    unsetenv("CKJIT_PERF_MAP");
    const std::string path = "/tmp/perf-" + std::to_string(getpid()) + ".map";
    std::ifstream map(path);
    REQUIRE(map.good());
    std::string line, want = "ckjit[" + spec.to_string() + "]";
    bool found = false;
    while (std::getline(map, line)) {
      std::istringstream in(line);
      std::string start, size, name;
      in >> start >> size >> name;
      if (name != want) continue;
      found = true;
      CHECK(std::stoull(start, nullptr, 16) == reinterpret_cast<uintptr_t>(k.entry()));
      CHECK(std::stoull(size, nullptr, 16) == k.size());
    }
    CHECK(found);
    std::remove(path.c_str());
  }

  TEST_CASE("describe_kernel names the spec and dumps the code") {
    std::string d = describe_kernel("op=gemv,w=q4_K,a=q8_K,isa=avx512,mr=1,nr=4,k=512");
    CHECK(d.find("op=gemv,w=q4_K") != std::string::npos);
    CHECK(d.find("bytes") != std::string::npos);
    CHECK(d.size() > 1000);
    CHECK_THROWS_AS(describe_kernel("op=gemm,k=256,isa=avx2,w=q6_K,a=q8_0"), Error);
  }

  TEST_CASE("Q4_K GEMM avx512 equals its scalar twin bit for bit on odd shapes") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    for (int64_t k : {256, 4096})
      for (int64_t m : {1, 2, 3, 17})
        for (int64_t n : {5, 53, 100}) check_matmul(q4k_spec(Op::Gemm, 4, 3, k), m, n, uint32_t(k + m * 7 + n));
    check_matmul(q4k_spec(Op::Gemm, 6, 2, 256), 13, 70, 5);
    check_matmul(q4k_spec(Op::Gemm, 4, 3, 256, Epilogue::ResidualAdd), 7, 61, 6);
    KernelSpec pf = q4k_spec(Op::Gemv, 1, 4, 1024);
    pf.pf = 2;  // prefetching must not change results
    check_matmul(pf, 1, 70, 8);
  }

  TEST_CASE("Q4_K GEMV avx512 (M = 1 and small M) equals its scalar twin") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    for (int64_t m : {1, 2, 3})
      for (int64_t n : {16, 77}) check_matmul(q4k_spec(Op::Gemv, 1, 4, 4096), m, n, uint32_t(m + n));
  }

  TEST_CASE("fused Gate-Up SwiGLU avx512 equals its scalar twin") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    for (int64_t m : {1, 2, 3, 17})
      for (int64_t n : {16, 45}) check_matmul(q4k_spec(Op::SwiGLU, 6, 2, 512, Epilogue::SwiGLU), m, n, uint32_t(m * n));
    check_matmul(q4k_spec(Op::SwiGLU, 2, 4, 256, Epilogue::SwiGLU), 5, 80, 3);
    CHECK_THROWS_AS(global_code_cache().get(q4k_spec(Op::SwiGLU, 4, 4, 256, Epilogue::SwiGLU)), Error);
  }
}

TEST_SUITE("jit") {
  TEST_CASE("Q4_K avx2 GEMM and GEMV and SwiGLU equal their scalar twins") {
    if (!avx2_runs()) CKJIT_SKIP("AVX2 not usable here");
    const IsaPath a2 = IsaPath::Avx2;
    check_matmul_shapes(q4k_spec(Op::Gemm, 2, 2, 256, Epilogue::Store, a2), {256, 4096}, {5, 21, 100});
    check_matmul(q4k_spec(Op::Gemm, 3, 1, 256, Epilogue::ResidualAdd, a2), 7, 29, 6);
    for (int64_t m : {1, 2, 3}) check_matmul(q4k_spec(Op::Gemv, 1, 4, 2048, Epilogue::Store, a2), m, 37, uint32_t(m));
    for (int64_t m : {1, 2, 3, 17})
      check_matmul(q4k_spec(Op::SwiGLU, 2, 2, 512, Epilogue::SwiGLU, a2), m, 27, uint32_t(m * 5));
    // The decode kernels prefetch (pf): results unchanged.
    KernelSpec pf = q4k_spec(Op::Gemv, 1, 4, 2048, Epilogue::Store, a2);
    pf.pf = 4;
    check_matmul(pf, 1, 37, 9);
    KernelSpec pf_swiglu = q4k_spec(Op::SwiGLU, 2, 2, 512, Epilogue::SwiGLU, a2);
    pf_swiglu.pf = 4;
    check_matmul(pf_swiglu, 1, 27, 10);
    CHECK_THROWS_AS(global_code_cache().get(q4k_spec(Op::Gemm, 4, 2, 256, Epilogue::Store, a2)), Error);
    // A kernel above the allowed ISA is still emitted (for inspection) but refuses to run.
    const JitKernel& wide = global_code_cache().get(q4k_spec(Op::Gemm, 2, 2, 256));
    CHECK(wide.runnable() == avx512_runs());
    if (!wide.runnable()) CHECK_THROWS_AS(wide.require_runnable(), Error);
  }

  TEST_CASE("avx2 and avx512 Q4_K paths give bit-identical outputs") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    const int64_t m = 5, n = 40, k = 512;
    auto wq = random_q4k(n, k, 77);
    auto x = random_q8k(m, k, 78);
    std::vector<float> y8(size_t(m * n)), y16(size_t(m * n));
    for (IsaPath isa : {IsaPath::Avx2, IsaPath::Avx512}) {
      PackedWeights w = repack_q4_K(wq.data(), n, k, panel_cols(isa), 1);
      MatmulOperands op;
      op.w = &w;
      op.x = x.data();
      op.ldx = k / 256 * int64_t(sizeof(BlockQ8_K));
      op.y = isa == IsaPath::Avx2 ? y8.data() : y16.data();
      op.ldy = n * 4;
      run_tile(global_code_cache().get(q4k_spec(Op::Gemm, 2, 1, k, Epilogue::Store, isa)), op, {0, m, 0, n});
    }
    CHECK(std::memcmp(y8.data(), y16.data(), y8.size() * 4) == 0);
  }
}

TEST_SUITE("jit") {
  TEST_CASE("Q6_K repack is lossless") {
    for (int panel : {16, 8}) {
      auto src = random_q6k(21, 512, uint32_t(panel));
      PackedWeights w = repack_q6_K(src.data(), 21, 512, panel, 2);
      std::vector<quant::BlockQ6_K> back(src.size());
      unpack_q6_K(w, back.data());
      CHECK(std::memcmp(back.data(), src.data(), src.size() * sizeof(quant::BlockQ6_K)) == 0);
    }
  }

  TEST_CASE("Q6_K reference equals llama.cpp's vec_dot within float reordering") {
    auto wq = random_q6k(3, 1024, 5);
    auto x = random_q8k(1, 1024, 6);
    PackedWeights w = repack_q6_K(wq.data(), 3, 1024, 16, 1);
    for (int l = 0; l < 3; ++l) {
      float r = ref_dot_q6k(w.panel_ptr(0), 16, l, reinterpret_cast<const uint8_t*>(x.data()), 4);
      float v = quant::vec_dot_q6_K_q8_K(wq.data() + 4 * l, x.data(), 1024);
      CHECK(std::fabs(r - v) <= 1e-5f * (1.0f + std::fabs(v)));
    }
  }

  TEST_CASE("Q6_K avx512 GEMM and GEMV and SwiGLU equal their scalar twins") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    const TensorType wt = TensorType::Q6_K;
    check_matmul_shapes(matmul_spec(wt, Op::Gemm, 4, 3, 256), {256, 4096}, {7, 53});
    check_matmul(matmul_spec(wt, Op::Gemm, 4, 3, 512, Epilogue::ResidualAdd), 5, 40, 2);
    check_matmul(matmul_spec(wt, Op::Gemv, 1, 4, 2048), 1, 100, 3);
    check_matmul(matmul_spec(wt, Op::SwiGLU, 6, 2, 512, Epilogue::SwiGLU), 7, 33, 4);
  }
}

TEST_SUITE("jit") {
  TEST_CASE("Q8_0 repack is lossless") {
    auto src = random_q80(19, 96, 4);
    PackedWeights w = repack_q8_0(src.data(), 19, 96, 16, 2);
    std::vector<quant::BlockQ8_0> back(src.size());
    unpack_q8_0(w, back.data());
    CHECK(std::memcmp(back.data(), src.data(), src.size() * sizeof(quant::BlockQ8_0)) == 0);
  }

  TEST_CASE("Q8_0 avx512 GEMM and GEMV and SwiGLU equal their scalar twins") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    const TensorType wt = TensorType::Q8_0;
    check_matmul_shapes(matmul_spec(wt, Op::Gemm, 4, 3, 256), {32, 256, 4096}, {9, 53});
    check_matmul(matmul_spec(wt, Op::Gemm, 4, 3, 512, Epilogue::ResidualAdd), 5, 40, 2);
    check_matmul(matmul_spec(wt, Op::Gemv, 1, 4, 2048), 1, 100, 3);
    check_matmul(matmul_spec(wt, Op::SwiGLU, 6, 2, 512, Epilogue::SwiGLU), 7, 33, 4);
  }

  TEST_CASE("Q8_0 reference equals llama.cpp's vec_dot within float reordering") {
    // The reference itself against llama.cpp's vec_dot (different float order: tolerance).
    auto wq = random_q80(1, 256, 8);
    std::vector<float> xf(256, 0.0f);
    for (int i = 0; i < 256; ++i) xf[size_t(i)] = float((i * 37) % 19) - 9.0f;
    std::vector<quant::BlockQ8_0> xq(8);
    quant::quantize_row_q8_0_x86(xf.data(), xq.data(), 256);
    PackedWeights w = repack_q8_0(wq.data(), 1, 256, 16, 1);
    float r = ref_dot_q80(w.panel_ptr(0), 16, 0, reinterpret_cast<const uint8_t*>(xq.data()), 8);
    float vd = quant::vec_dot_q8_0_q8_0(wq.data(), xq.data(), 256);
    CHECK(std::fabs(r - vd) <= 1e-5f * (1.0f + std::fabs(vd)));
  }
}

TEST_SUITE("jit") {
  TEST_CASE("Q5_K repack is lossless and its reference matches llama.cpp's vec_dot") {
    auto src = random_q5k(23, 512, 9);
    PackedWeights w = repack_q5_K(src.data(), 23, 512, 16, 2);
    std::vector<quant::BlockQ5_K> back(src.size());
    unpack_q5_K(w, back.data());
    CHECK(std::memcmp(back.data(), src.data(), src.size() * sizeof(quant::BlockQ5_K)) == 0);
    auto x = random_q8k(1, 512, 10);
    for (int l = 0; l < 3; ++l) {
      float r = ref_dot_q5k(w.panel_ptr(0), 16, l, reinterpret_cast<const uint8_t*>(x.data()), 2);
      float v = quant::vec_dot_q5_K_q8_K(src.data() + 2 * l, x.data(), 512);
      CHECK(std::fabs(r - v) <= 1e-5f * (1.0f + std::fabs(v)));
    }
  }

  TEST_CASE("Q5_K avx512 GEMM and GEMV and SwiGLU equal their scalar twins") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    const TensorType wt = TensorType::Q5_K;
    check_matmul_shapes(matmul_spec(wt, Op::Gemm, 4, 3, 256), {256, 4096}, {7, 53});
    check_matmul(matmul_spec(wt, Op::Gemv, 1, 4, 2048), 1, 100, 3);
    check_matmul(matmul_spec(wt, Op::SwiGLU, 6, 2, 512, Epilogue::SwiGLU), 7, 33, 4);
  }
}

TEST_SUITE("jit") {
  TEST_CASE("SwiGLU straight into Q8_K equals SwiGLU then the reference quantizer") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    const int64_t m = 7, n = 768, k = 512;
    KernelSpec sw = q4k_spec(Op::SwiGLU, 6, 2, k, Epilogue::SwiGLU);
    PackedWeights g = random_packed(sw, n, k, 1), u = random_packed(sw, n, k, 2);
    auto x = random_q8k(m, k, 3);
    MatmulOperands op;
    op.w = &g;
    op.w2 = &u;
    op.x = x.data();
    op.ldx = k / 256 * int64_t(sizeof(BlockQ8_K));
    std::vector<float> y(size_t(m * n));
    op.y = y.data();
    op.ldy = n * 4;
    const JitKernel& ks = global_code_cache().get(sw);
    run_tile(ks, op, {0, m, 0, n});
    std::vector<BlockQ8_K> want(size_t(m * n / 256)), got(want.size());
    for (int64_t r = 0; r < m; ++r) quant::quantize_row_q8_K(y.data() + r * n, want.data() + r * (n / 256), n);
    const JitKernel& q = global_code_cache().get(KernelSpec::parse("op=quantize,w=f32,a=q8_K,isa=avx512,k=256"));
    const int64_t ldd = n / 256 * int64_t(sizeof(BlockQ8_K));
    run_swiglu_to_q8k_tile(ks, q, op, got.data(), ldd, {0, 3, 0, 512});
    run_swiglu_to_q8k_tile(ks, q, op, got.data(), ldd, {3, m, 0, 512});
    run_swiglu_to_q8k_tile(ks, q, op, got.data(), ldd, {0, m, 512, n});
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(BlockQ8_K)) == 0);
    CHECK_THROWS_AS(run_swiglu_to_q8k_tile(ks, q, op, got.data(), ldd, {0, m, 16, 256}), Error);
  }
}

TEST_SUITE("jit") {
  TEST_CASE("Q8_0 avx2 GEMM and SwiGLU equal their scalar twins") {
    if (!avx2_runs()) CKJIT_SKIP("AVX2 not usable here");
    const TensorType wt = TensorType::Q8_0;
    const IsaPath a2 = IsaPath::Avx2;
    check_matmul_shapes(matmul_spec(wt, Op::Gemm, 2, 2, 256, Epilogue::Store, a2), {32, 4096}, {5, 29});
    check_matmul(matmul_spec(wt, Op::SwiGLU, 2, 2, 512, Epilogue::SwiGLU, a2), 3, 17, 4);
  }

  TEST_CASE("Q5_K avx2 GEMM and SwiGLU equal their scalar twins") {
    if (!avx2_runs()) CKJIT_SKIP("AVX2 not usable here");
    const TensorType wt = TensorType::Q5_K;
    const IsaPath a2 = IsaPath::Avx2;
    check_matmul_shapes(matmul_spec(wt, Op::Gemm, 2, 2, 256, Epilogue::Store, a2), {256, 4096}, {5, 29});
    check_matmul(matmul_spec(wt, Op::SwiGLU, 2, 2, 512, Epilogue::SwiGLU, a2), 3, 17, 4);
  }

  TEST_CASE("Q6_K avx2 GEMM and GEMV and SwiGLU equal their scalar twins") {
    if (!avx2_runs()) CKJIT_SKIP("AVX2 not usable here");
    const TensorType wt = TensorType::Q6_K;
    const IsaPath a2 = IsaPath::Avx2;
    check_matmul_shapes(matmul_spec(wt, Op::Gemm, 2, 2, 256, Epilogue::Store, a2), {256, 4096}, {5, 29});
    check_matmul(matmul_spec(wt, Op::Gemm, 2, 2, 512, Epilogue::ResidualAdd, a2), 5, 20, 2);
    check_matmul(matmul_spec(wt, Op::SwiGLU, 2, 2, 512, Epilogue::SwiGLU, a2), 3, 17, 4);
    for (int64_t m : {1, 2, 3}) check_matmul(matmul_spec(wt, Op::Gemv, 1, 4, 2048, Epilogue::Store, a2), m, 37, uint32_t(m));
    check_matmul(matmul_spec(wt, Op::Gemv, 1, 2, 256, Epilogue::ResidualAdd, a2), 1, 21, 9);
  }
}

TEST_SUITE("jit") {
  TEST_CASE("Q4_K avx512 kernels are bit-identical to llama.cpp's repacked gemv order") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    check_repacked_gemv_order(IsaPath::Avx512);
  }

  TEST_CASE("Q4_K avx2 kernels are bit-identical to llama.cpp's repacked gemv order") {
    if (!avx2_runs()) CKJIT_SKIP("AVX2 not usable here");
    check_repacked_gemv_order(IsaPath::Avx2);
  }
}

TEST_SUITE("slow") {
  TEST_CASE("Q4_K GEMM and SwiGLU avx512 at M = 1028") {
    if (!avx512_runs()) CKJIT_SKIP("AVX-512 VNNI not usable here");
    check_matmul(q4k_spec(Op::Gemm, 4, 3, 4096), 1028, 21, 9);
    check_matmul(q4k_spec(Op::SwiGLU, 6, 2, 4096, Epilogue::SwiGLU), 1028, 19, 10);
  }
}
