// Generated activation quantizers against the reference quantizers of runtime/quants (bytes).
#include <doctest/doctest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/kernel_args.h"
#include "runtime/quants/quants.h"
#include "tests/unit/skip.h"

using namespace ckjit;
using namespace ckjit::jit;

namespace {

// The generated f32 -> Q8_0 quantizer of `isa` against llama.cpp's x86 variant, byte for byte.
void check_q8_0_quantizer(IsaPath isa) {
  const int64_t k = 256, rows = 3, nb = k / 32;
  std::mt19937 rng{7u};
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(size_t(rows * k));
  for (auto& f : x) f = nd(rng);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);  // zero block
  x[70] = 1e7f;                                      // d = amax/127 above the f16 range
  x[200] = 1e-6f;
  KernelSpec s = KernelSpec::parse(std::string("op=quantize,w=f32,a=q8_0,isa=") + isa_name(isa) + ",k=256");
  std::vector<quant::BlockQ8_0> yj(size_t(rows * nb)), yr(yj.size());
  QuantizeArgs a;
  a.x = x.data();
  a.y = yj.data();
  a.rows = rows;
  a.ldx = k * 4;
  a.ldy = nb * int64_t(sizeof(quant::BlockQ8_0));
  global_code_cache().get(s).as<QuantizeFn>()(&a);
  for (int64_t r = 0; r < rows; ++r) quant::quantize_row_q8_0_x86(x.data() + r * k, yr.data() + r * nb, k);
  for (size_t b = 0; b < yj.size(); ++b)
    CHECK_MESSAGE(std::memcmp(&yj[b], &yr[b], sizeof(yj[b])) == 0, "block " << b << " " << isa_name(isa));
}

// The generated f32 -> Q8_K quantizer of `isa` against the reference quantizer, byte for byte.
void check_q8_K_quantizer(IsaPath isa) {
  for (int64_t k : {256, 4096}) {
    const int64_t rows = 5, nb = k / 256;
    std::mt19937 rng{static_cast<uint32_t>(k)};
    std::normal_distribution<float> nd(0.f, 3.f);
    std::vector<float> x(size_t(rows * k));
    for (auto& f : x) f = nd(rng);
    std::fill(x.begin() + 256, x.begin() + 512, 0.0f);  // an all-zero block (row 0 or 1)
    x[3] = -50.0f;                                      // tie: -amax first, then +amax
    x[9] = 50.0f;
    x[size_t(k) + 7] = 1e-30f;
    KernelSpec s = KernelSpec::parse(std::string("op=quantize,w=f32,a=q8_K,isa=") + isa_name(isa) + ",k=" + std::to_string(k));
    const JitKernel& kern = global_code_cache().get(s);
    std::vector<quant::BlockQ8_K> yj(size_t(rows * nb)), yr(size_t(rows * nb));
    std::memset(yj.data(), 0x55, yj.size() * sizeof(yj[0]));
    QuantizeArgs a;
    a.x = x.data();
    a.y = yj.data();
    a.rows = rows;
    a.ldx = k * 4;
    a.ldy = nb * int64_t(sizeof(quant::BlockQ8_K));
    kern.as<QuantizeFn>()(&a);
    for (int64_t r = 0; r < rows; ++r) quant::quantize_row_q8_K(x.data() + r * k, yr.data() + r * nb, k);
    for (size_t b = 0; b < yj.size(); ++b)
      CHECK_MESSAGE(std::memcmp(&yj[b], &yr[b], sizeof(yj[b])) == 0, "block " << b << " k=" << k << " " << isa_name(isa));
  }
}

bool runs(IsaPath isa) { return isa_runs(isa, runtime_isa()); }

}  // namespace

TEST_SUITE("jit") {
  TEST_CASE("f32 to Q8_0 quantizer avx512 is byte-identical to llama.cpp's x86 variant") {
    if (!runs(IsaPath::Avx512)) CKJIT_SKIP("avx512 kernels not usable here");
    check_q8_0_quantizer(IsaPath::Avx512);
  }

  TEST_CASE("f32 to Q8_0 quantizer avx2 is byte-identical to llama.cpp's x86 variant") {
    if (!runs(IsaPath::Avx2)) CKJIT_SKIP("avx2 kernels not usable here");
    check_q8_0_quantizer(IsaPath::Avx2);
  }

  TEST_CASE("f32 to Q8_K quantizer avx512 is byte-identical to the reference") {
    if (!runs(IsaPath::Avx512)) CKJIT_SKIP("avx512 kernels not usable here");
    check_q8_K_quantizer(IsaPath::Avx512);
  }

  TEST_CASE("f32 to Q8_K quantizer avx2 is byte-identical to the reference") {
    if (!runs(IsaPath::Avx2)) CKJIT_SKIP("avx2 kernels not usable here");
    check_q8_K_quantizer(IsaPath::Avx2);
  }
}
