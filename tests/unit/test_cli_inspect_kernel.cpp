// `ckjit inspect --kernel SPEC` end to end.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/unit/cli_run.h"

TEST_SUITE("jit") {
TEST_CASE("ckjit inspect --kernel dumps the spec and the generated code") {
  auto r = run_ckjit("inspect --kernel op=swiglu,w=q4_K,a=q8_K,isa=avx512,mr=6,nr=2,k=512,ep=swiglu");
  CHECK(r.status == 0);
  CHECK(r.output.find("spec: op=swiglu,w=q4_K") != std::string::npos);
  CHECK(r.output.find("code: ") != std::string::npos);
  // Disassembly (objdump present) or raw bytes: either way, several lines of code.
  CHECK(std::count(r.output.begin(), r.output.end(), '\n') > 20);
  auto bad = run_ckjit("inspect --kernel op=gemm,w=q4_K,k=100");
  CHECK(bad.status == 1);
  CHECK(bad.output.find("error") != std::string::npos);
  CHECK(run_ckjit("inspect --kernel op=gemm,k=256 some.gguf").status == 1);
}
}  // TEST_SUITE
