// The AVX-VNNI path (isa=avxvnni): ymm kernels with vpdpbusd / vpdpwssd. Results run here through
// the EVEX form (Zen 4 has AVX512-VNNI + VL but no AVX-VNNI) or the VEX form where the CPU has
// AVX-VNNI; the VEX form is always emitted and its encoding checked byte by byte.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "runtime/error.h"
#include "tests/unit/cli_run.h"
#include "tests/unit/jit_matmul_check.h"
#include "tests/unit/skip.h"

using namespace ckjit;
using namespace ckjit::jit;
using namespace ckjit::test;

namespace {

KernelSpec vnni_spec(TensorType w, Op op, int mr, int nr, int64_t k, VnniEncoding enc) {
  KernelSpec s = matmul_spec(w, op, mr, nr, k, op == Op::SwiGLU ? Epilogue::SwiGLU : Epilogue::Store, IsaPath::AvxVnni);
  s.enc = enc;
  return s;
}

// The encodings whose kernels this process may execute (often just one, sometimes none: a test
// case that runs avxvnni kernels then skips as a whole, kNoVnni).
std::vector<VnniEncoding> runnable_encodings() {
  std::vector<VnniEncoding> e;
  for (VnniEncoding enc : {VnniEncoding::Vex, VnniEncoding::Evex})
    if (isa_runs(IsaPath::AvxVnni, runtime_isa(), enc)) e.push_back(enc);
  return e;
}

constexpr const char* kNoVnni = "neither AVX-VNNI nor AVX512-VNNI+VL usable here: avxvnni kernels not executed";

// Register-form ymm vpdpbusd (opcode 0x50) / vpdpwssd (0x52), map 0F38, prefix 66, W0, in VEX
// (C4 RXB.00010 W.vvvv.1.01 op modrm) or EVEX (62 RXBR'.00.10 W.vvvv.1.01 z.L'L=01.b.V'aaa op
// modrm) form. Counts byte patterns over the whole code (constants included: a false hit there
// would show up as a count mismatch between the two encodings below).
int count_dots(const JitKernel& k, uint8_t opcode, bool evex) {
  const auto* p = static_cast<const uint8_t*>(k.entry());
  const size_t n = k.size();
  int hits = 0;
  for (size_t i = 0; i + 6 <= n; ++i) {
    if (!evex && p[i] == 0xC4 && (p[i + 1] & 0x1F) == 0x02 && (p[i + 2] & 0x87) == 0x05 && p[i + 3] == opcode &&
        (p[i + 4] & 0xC0) == 0xC0)
      ++hits;
    if (evex && p[i] == 0x62 && (p[i + 1] & 0x0F) == 0x02 && (p[i + 2] & 0x87) == 0x05 && (p[i + 3] & 0x60) == 0x20 &&
        p[i + 4] == opcode && (p[i + 5] & 0xC0) == 0xC0)
      ++hits;
  }
  return hits;
}

constexpr TensorType kWeightTypes[] = {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_0};

}  // namespace

TEST_SUITE("jit") {
  TEST_CASE("avxvnni specs: text form / encoding key / ymm register budget / path order") {
    KernelSpec s = vnni_spec(TensorType::Q6_K, Op::Gemm, 3, 1, 512, VnniEncoding::Evex);
    CHECK(s.to_string().find("isa=avxvnni") != std::string::npos);
    CHECK(s.to_string().find(",enc=evex") != std::string::npos);
    CHECK(KernelSpec::parse(s.to_string()) == s);
    CHECK(KernelSpec::parse("op=gemm,k=256,isa=avxvnni,mr=2,nr=2").enc == VnniEncoding::Vex);
    CHECK(q4k_spec(Op::Gemm, 2, 2, 256).to_string().find("enc=") == std::string::npos);  // other paths unchanged
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,k=256,isa=avx2,mr=2,nr=2,enc=evex"), Error);
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,k=256,isa=avxvnni,mr=2,nr=2,enc=zmm"), Error);
    // One accumulator register per (row, stream): mr*nr + nr <= 13 (AVX2 needs 2*mr*nr + nr).
    CHECK_NOTHROW(KernelSpec::parse("op=swiglu,k=256,isa=avxvnni,mr=5,nr=2,ep=swiglu"));
    CHECK_THROWS_AS(KernelSpec::parse("op=swiglu,k=256,isa=avxvnni,mr=6,nr=2,ep=swiglu"), Error);  // 14 > 13
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,k=256,isa=avx2,mr=4,nr=2"), Error);
    CHECK(panel_cols(IsaPath::AvxVnni) == 8);

    topo::Isa a;
    a.avx2 = a.fma = a.f16c = true;
    CHECK(isa_paths(a).front() == IsaPath::Avx2);
    CHECK_FALSE(isa_runs(IsaPath::AvxVnni, a, VnniEncoding::Vex));
    a.avx_vnni = true;  // e.g. Alder Lake
    CHECK(isa_paths(a).front() == IsaPath::AvxVnni);
    CHECK_FALSE(isa_runs(IsaPath::AvxVnni, a, VnniEncoding::Evex));
    topo::Isa z;  // e.g. Zen 4: AVX512-VNNI + VL, no AVX-VNNI
    z.avx2 = z.fma = z.f16c = z.avx512f = z.avx512bw = z.avx512vl = z.avx512vnni = true;
    CHECK(isa_paths(z).front() == IsaPath::Avx512);
    CHECK(isa_runs(IsaPath::AvxVnni, z, VnniEncoding::Evex));
    CHECK_FALSE(isa_runs(IsaPath::AvxVnni, z, VnniEncoding::Vex));
    // CKJIT_MAX_ISA=avxvnni removes AVX-512, so the EVEX test form no longer runs either.
    CHECK_FALSE(isa_runs(IsaPath::AvxVnni, topo::cap_isa(z, "avxvnni"), VnniEncoding::Evex));
    CHECK(isa_paths(topo::cap_isa(z, "avxvnni")).front() == IsaPath::Avx2);
  }

  TEST_CASE("avxvnni VEX and EVEX kernels are emitted for every weight type with the chosen encoding") {
    for (TensorType w : kWeightTypes)
      for (Op op : {Op::Gemm, Op::SwiGLU}) {
        const int nr = 2, mr = 4;
        const JitKernel& vex = global_code_cache().get(vnni_spec(w, op, mr, nr, 512, VnniEncoding::Vex));
        const JitKernel& evex = global_code_cache().get(vnni_spec(w, op, mr, nr, 512, VnniEncoding::Evex));
        CAPTURE(vex.spec().to_string());
        CHECK(vex.size() > 1000);
        CHECK(vex.runnable() == isa_runs(IsaPath::AvxVnni, runtime_isa(), VnniEncoding::Vex));
        if (!vex.runnable()) CHECK_THROWS_AS(vex.require_runnable(), Error);
        const int vex_busd = count_dots(vex, 0x50, false);
        CHECK(vex_busd > 0);
        CHECK(count_dots(vex, 0x50, true) == 0);
        CHECK(count_dots(evex, 0x50, true) == vex_busd);
        CHECK(count_dots(evex, 0x50, false) == 0);
        // vpdpwssd accumulates the min / bsums terms of the K-quants; Q8_0 has none.
        const int vex_wssd = count_dots(vex, 0x52, false);
        CHECK((vex_wssd > 0) == (w != TensorType::Q8_0));
        CHECK(count_dots(evex, 0x52, true) == vex_wssd);
        CHECK(count_dots(vex, 0x52, true) == 0);
      }
    // objdump, where present, agrees: VEX-encoded AVX-VNNI instructions carry a {vex} prefix.
    std::string d = describe_kernel("op=gemm,w=q4_K,a=q8_K,isa=avxvnni,mr=2,nr=2,k=256,enc=vex");
    CHECK(d.find("enc=vex") != std::string::npos);
    if (d.find("vpdpbusd") != std::string::npos) {
      CHECK(d.find("{vex} vpdpbusd") != std::string::npos);
      CHECK(d.find("{vex} vpdpwssd") != std::string::npos);
    }
  }

  TEST_CASE("avxvnni quantizers are the AVX2 quantizers") {
    for (const char* a : {"q8_K", "q8_0"}) {
      const std::string tail = std::string("op=quantize,w=f32,a=") + a + ",k=512";
      const JitKernel& v = global_code_cache().get(KernelSpec::parse(tail + ",isa=avxvnni"));
      const JitKernel& a2 = global_code_cache().get(KernelSpec::parse(tail + ",isa=avx2"));
      REQUIRE(v.size() == a2.size());
      CHECK(std::memcmp(v.entry(), a2.entry(), v.size()) == 0);
    }
  }

  TEST_CASE("ckjit inspect --kernel shows an avxvnni kernel") {
    auto r = run_ckjit("inspect --kernel op=gemm,w=q4_K,a=q8_K,isa=avxvnni,mr=2,nr=2,k=256");
    CHECK(r.status == 0);
    CHECK(r.output.find("isa=avxvnni") != std::string::npos);
    CHECK(r.output.find("enc=vex") != std::string::npos);
  }

  TEST_CASE("Q4_K avxvnni GEMM / GEMV / residual and SwiGLU equal their scalar twins") {
    const std::vector<VnniEncoding> encodings = runnable_encodings();
    if (encodings.empty()) CKJIT_SKIP(kNoVnni);
    for (VnniEncoding enc : encodings) {
      const TensorType q4 = TensorType::Q4_K;
      for (int64_t k : {256, 4096})
        for (int64_t m : {1, 2, 3, 17})
          for (int64_t n : {5, 21, 100}) {
            check_matmul(vnni_spec(q4, Op::Gemm, 2, 2, k, enc), m, n, uint32_t(k + m + n));
            check_matmul(vnni_spec(q4, Op::Gemm, 5, 2, k, enc), m, n, uint32_t(k + m + n + 1));
          }
      KernelSpec r = vnni_spec(q4, Op::Gemm, 3, 1, 256, enc);
      r.epilogue = Epilogue::ResidualAdd;
      check_matmul(r, 7, 29, 6);
      for (int64_t m : {1, 2, 3}) check_matmul(vnni_spec(q4, Op::Gemv, 1, 4, 2048, enc), m, 37, uint32_t(m));
      for (int64_t m : {1, 2, 3, 17}) {
        check_matmul(vnni_spec(q4, Op::SwiGLU, 2, 2, 512, enc), m, 27, uint32_t(m * 5));
        check_matmul(vnni_spec(q4, Op::SwiGLU, 5, 2, 512, enc), m, 27, uint32_t(m * 5 + 1));
      }
      check_matmul(vnni_spec(q4, Op::Gemm, 6, 1, 512, enc), 13, 19, 3);  // tallest row block
      check_matmul(vnni_spec(q4, Op::Gemm, 3, 3, 512, enc), 7, 61, 4);
      check_matmul(vnni_spec(q4, Op::SwiGLU, 2, 4, 256, enc), 5, 80, 5);  // two gate/up pairs
    }
  }

  TEST_CASE("Q5_K / Q6_K and Q8_0 avxvnni GEMM / GEMV / residual and SwiGLU equal their scalar twins") {
    const std::vector<VnniEncoding> encodings = runnable_encodings();
    if (encodings.empty()) CKJIT_SKIP(kNoVnni);
    for (VnniEncoding enc : encodings)
      for (TensorType w : {TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_0}) {
        const bool q80 = w == TensorType::Q8_0;
        for (int64_t k : {q80 ? int64_t(32) : int64_t(256), int64_t(4096)})
          for (int64_t m : {1, 2, 3, 17})
            for (int64_t n : {5, 29}) {
              check_matmul(vnni_spec(w, Op::Gemm, 2, 2, k, enc), m, n, uint32_t(k + m + n));
              check_matmul(vnni_spec(w, Op::Gemm, 4, 2, k, enc), m, n, uint32_t(k + m + n + 1));
            }
        KernelSpec r = vnni_spec(w, Op::Gemm, 3, 1, 512, enc);
        r.epilogue = Epilogue::ResidualAdd;
        check_matmul(r, 5, 20, 2);
        check_matmul(vnni_spec(w, Op::Gemv, 1, 4, 2048, enc), 1, 100, 3);
        check_matmul(vnni_spec(w, Op::SwiGLU, 2, 2, 512, enc), 3, 17, 4);
        check_matmul(vnni_spec(w, Op::SwiGLU, 5, 2, 512, enc), 11, 17, 5);
      }
  }

  TEST_CASE("avxvnni and avx2 Q4_K / Q6_K paths give bit-identical outputs on the same panels") {
    if (!isa_runs(IsaPath::Avx2, runtime_isa())) CKJIT_SKIP("AVX2 not usable here");
    const std::vector<VnniEncoding> encodings = runnable_encodings();
    if (encodings.empty()) CKJIT_SKIP(kNoVnni);
    for (VnniEncoding enc : encodings)
      for (TensorType wt : {TensorType::Q4_K, TensorType::Q6_K}) {
        const int64_t m = 5, n = 40, k = 1024;
        KernelSpec sv = vnni_spec(wt, Op::Gemm, 2, 2, k, enc), s2 = sv;
        s2.isa = IsaPath::Avx2;
        s2.enc = VnniEncoding::Vex;
        PackedWeights w = random_packed(sv, n, k, 41);
        auto x = random_q8k(m, k, 42);
        std::vector<float> yv(size_t(m * n)), y2(size_t(m * n));
        MatmulOperands op;
        op.w = &w;
        op.x = x.data();
        op.ldx = k / 256 * int64_t(sizeof(quant::BlockQ8_K));
        op.ldy = n * 4;
        op.y = yv.data();
        run_tile(global_code_cache().get(sv), op, {0, m, 0, n});
        op.y = y2.data();
        run_tile(global_code_cache().get(s2), op, {0, m, 0, n});
        CHECK(std::memcmp(yv.data(), y2.data(), yv.size() * 4) == 0);
      }
  }
}

TEST_SUITE("slow") {
  TEST_CASE("Q4_K and Q6_K avxvnni GEMM and SwiGLU at M = 1028") {
    const std::vector<VnniEncoding> encodings = runnable_encodings();
    if (encodings.empty()) CKJIT_SKIP(kNoVnni);
    for (VnniEncoding enc : encodings) {
      check_matmul(vnni_spec(TensorType::Q4_K, Op::Gemm, 2, 2, 4096, enc), 1028, 21, 9);
      check_matmul(vnni_spec(TensorType::Q4_K, Op::SwiGLU, 5, 2, 4096, enc), 1028, 19, 10);
      check_matmul(vnni_spec(TensorType::Q6_K, Op::Gemm, 3, 1, 4096, enc), 1028, 13, 11);
    }
  }
}
