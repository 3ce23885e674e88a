// The AMX emitter: everywhere, every spec shape is emitted and its tile configuration and code are
// checked; where AMX runs (tools/device-check.sh runs these on a lent machine too), every weight
// type's GEMM and SwiGLU kernels equal their scalar twins bit for bit, row tails included.
#include <doctest/doctest.h>

#include <cstdlib>
#include <string>

#include "jit/x86/amx_tile_config.h"
#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "runtime/error.h"
#include "jit_matmul_check.h"
#include "skip.h"

using namespace ckjit;
using namespace ckjit::jit;

TEST_SUITE("jit") {
  TEST_CASE("AMX specs of every weight type emit with a consistent tile configuration") {
    const bool have_objdump = std::system("command -v objdump >/dev/null 2>&1") == 0;
    for (const char* types : {"w=q4_K,a=q8_K", "w=q5_K,a=q8_K", "w=q6_K,a=q8_K", "w=q8_0,a=q8_0"})
    for (const char* op : {"gemm", "gemv", "swiglu"})
      for (int nr : {1, 2})
        for (int64_t k : {256, 4096}) {
          if (std::string(op) == "swiglu" && nr != 2) continue;
          const bool q6 = std::string(types).find("q6_K") != std::string::npos;
          const bool q80 = std::string(types).find("q8_0") != std::string::npos;
          std::string text = std::string("op=") + op + "," + types + ",isa=amx,mr=16,nr=" + std::to_string(nr) +
                             ",k=" + std::to_string(k) + (std::string(op) == "swiglu" ? ",ep=swiglu" : "");
          KernelSpec spec = KernelSpec::parse(text);
          AmxTileConfig c = amx_tile_config(spec);
          CHECK(c.bytes[0] == 1);
          CHECK(c.streams == nr);
          const int A = AmxTileConfig::kATile;
          CHECK(c.rows(A) == 16);
          CHECK(c.colsb(A) == (q6 ? 16 : 32));
          for (int t = 0; t < nr; ++t) {
            const int B = AmxTileConfig::kBTile0 + t;
            CHECK(c.rows(t) == c.rows(A));       // C rows = A rows
            CHECK(c.colsb(t) == c.colsb(B));     // C columns = B columns (16 int32)
            CHECK(c.rows(B) * 4 == c.colsb(A));  // B rows (4-byte groups) = A's K
            CHECK(c.colsb(t) <= 64);
            CHECK(c.rows(B) <= 16);
          }
          for (int t = 0; t < 8; ++t) {
            const bool used = t < nr || t == A || (t >= AmxTileConfig::kBTile0 && t < AmxTileConfig::kBTile0 + nr);
            if (!used) CHECK(c.colsb(t) == 0);
          }
          c.set_rows(5);
          CHECK(c.rows(A) == 5);
          CHECK(c.rows(0) == 5);
          const JitKernel& kern = global_code_cache().get(spec);
          CHECK(kern.size() > 1000);
          if (!kern.runnable()) CHECK_THROWS_AS(kern.require_runnable(), Error);
          CHECK(kern.size() < 200000);
          if (have_objdump && k == 256) {
            std::string d = describe_kernel(text);
            CHECK(d.find("ldtilecfg") != std::string::npos);
            CHECK(d.find(q80 ? "tdpbssd" : "tdpbsud") != std::string::npos);
            CHECK(d.find("tilerelease") != std::string::npos);
          }
        }
    CHECK_THROWS_AS(KernelSpec::parse("op=gemm,w=q4_K,a=q8_K,isa=amx,mr=4,nr=1,k=256"), Error);
    CHECK_THROWS_AS(global_code_cache().get(KernelSpec::parse("op=gemm,w=q4_K,a=q8_K,isa=amx,mr=16,nr=3,k=256")), Error);
  }

  TEST_CASE("AMX GEMM and SwiGLU of every weight type equal their scalar twins") {
    if (!isa_runs(IsaPath::Amx, runtime_isa())) CKJIT_SKIP("AMX not usable here (or capped by CKJIT_MAX_ISA)");
    using test::check_matmul;
    using test::matmul_spec;
    for (TensorType wt : {TensorType::Q4_K, TensorType::Q5_K, TensorType::Q6_K, TensorType::Q8_0}) {
      CAPTURE(std::string(tensor_type_info(wt).name));
      const int64_t k = wt == TensorType::Q8_0 ? 96 : 512;
      test::check_matmul_shapes(matmul_spec(wt, Op::Gemm, 16, 2, k, Epilogue::Store, IsaPath::Amx), {k, 4 * k}, {9, 53});
      check_matmul(matmul_spec(wt, Op::Gemm, 16, 1, 2 * k, Epilogue::ResidualAdd, IsaPath::Amx), 33, 40, 2);
      check_matmul(matmul_spec(wt, Op::SwiGLU, 16, 2, k, Epilogue::SwiGLU, IsaPath::Amx), 37, 33, 4);
    }
  }
}
