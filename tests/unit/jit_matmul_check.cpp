// Shared helpers of the JIT matmul tests (see jit_matmul_check.h).
#include "tests/unit/jit_matmul_check.h"

#include <doctest/doctest.h>

#include <cstring>
#include <random>

#include "jit/code_cache.h"
#include "jit/kernels.h"
#include "jit/reference.h"

namespace ckjit::test {

using namespace ckjit::jit;
using quant::BlockQ4_K;
using quant::BlockQ8_K;

std::vector<BlockQ4_K> random_q4k(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0005f, 0.02f);
  std::vector<BlockQ4_K> v(size_t(n * k / 256));
  for (auto& b : v) {
    b.d = quant::f32_to_f16(scale(rng));
    b.dmin = quant::f32_to_f16(scale(rng));
    for (auto& s : b.scales) s = uint8_t(byte(rng));
    for (auto& q : b.qs) q = uint8_t(byte(rng));
  }
  return v;
}

std::vector<quant::BlockQ6_K> random_q6k(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0005f, 0.02f);
  std::vector<quant::BlockQ6_K> v(size_t(n * k / 256));
  for (auto& b : v) {
    for (auto& q : b.ql) q = uint8_t(byte(rng));
    for (auto& q : b.qh) q = uint8_t(byte(rng));
    for (auto& s : b.scales) s = int8_t(byte(rng) - 128);
    b.d = quant::f32_to_f16(scale(rng));
  }
  return v;
}

std::vector<quant::BlockQ8_0> random_q80(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0005f, 0.02f);
  std::vector<quant::BlockQ8_0> v(size_t(n * k / 32));
  for (auto& b : v) {
    for (auto& q : b.qs) q = int8_t(byte(rng) - 128);
    b.d = quant::f32_to_f16(scale(rng));
  }
  return v;
}

std::vector<quant::BlockQ5_K> random_q5k(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> scale(0.0005f, 0.02f);
  std::vector<quant::BlockQ5_K> v(size_t(n * k / 256));
  for (auto& b : v) {
    b.d = quant::f32_to_f16(scale(rng));
    b.dmin = quant::f32_to_f16(scale(rng));
    for (auto& s : b.scales) s = uint8_t(byte(rng));
    for (auto& q : b.qh) q = uint8_t(byte(rng));
    for (auto& q : b.qs) q = uint8_t(byte(rng));
  }
  return v;
}

// Random weights of the spec's type, repacked for its ISA.
PackedWeights random_packed(const KernelSpec& spec, int64_t n, int64_t k, uint32_t seed) {
  if (spec.wtype == TensorType::Q5_K) {
    auto q = random_q5k(n, k, seed);
    return repack_q5_K(q.data(), n, k, panel_cols(spec.isa), 2);
  }
  if (spec.wtype == TensorType::Q8_0) {
    auto q = random_q80(n, k, seed);
    return repack_q8_0(q.data(), n, k, panel_cols(spec.isa), 2);
  }
  if (spec.wtype == TensorType::Q6_K) {
    auto q = random_q6k(n, k, seed);
    return repack_q6_K(q.data(), n, k, panel_cols(spec.isa), 2);
  }
  auto q = random_q4k(n, k, seed);
  return repack_q4_K(q.data(), n, k, panel_cols(spec.isa), 2);
}

std::vector<BlockQ8_K> random_q8k(int64_t m, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(k));
  std::vector<BlockQ8_K> v(size_t(m * k / 256));
  for (int64_t r = 0; r < m; ++r) {
    for (auto& f : x) f = nd(rng);
    quant::quantize_row_q8_K(x.data(), v.data() + r * (k / 256), k);
  }
  return v;
}


KernelSpec q4k_spec(Op op, int mr, int nr, int64_t k, Epilogue ep, IsaPath isa) {
  KernelSpec s;
  s.op = op;
  s.wtype = TensorType::Q4_K;
  s.atype = TensorType::Q8_K;
  s.isa = isa;
  s.mr = mr;
  s.nr = nr;
  s.k = k;
  s.epilogue = ep;
  return s;
}

// Runs kernel and reference on the whole (m x n) problem and requires identical bits.
void check_matmul(const KernelSpec& spec, int64_t m, int64_t n, uint32_t seed) {
  const int64_t k = spec.k;
  PackedWeights w = random_packed(spec, n, k, seed);
  PackedWeights w2;
  if (spec.op == Op::SwiGLU) w2 = random_packed(spec, n, k, seed + 7);
  std::vector<BlockQ8_K> xk;
  std::vector<quant::BlockQ8_0> x0;
  const void* xp = nullptr;
  int64_t ldx = 0;
  if (spec.atype == TensorType::Q8_0) {
    std::mt19937 rng(seed + 1);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> xf(size_t(m * k));
    for (auto& f : xf) f = nd(rng);
    x0.resize(size_t(m * k / 32));
    for (int64_t r = 0; r < m; ++r) quant::quantize_row_q8_0_x86(xf.data() + r * k, x0.data() + r * (k / 32), k);
    xp = x0.data();
    ldx = k / 32 * int64_t(sizeof(quant::BlockQ8_0));
  } else {
    xk = random_q8k(m, k, seed + 1);
    xp = xk.data();
    ldx = k / 256 * int64_t(sizeof(BlockQ8_K));
  }
  std::vector<float> res(size_t(m * n));
  for (size_t i = 0; i < res.size(); ++i) res[i] = float(int(i % 13) - 6) * 0.25f;
  const int64_t ldy = (n + 3) * 4;  // padded rows: the kernel must honour ldy and not write past n
  std::vector<float> yj(size_t(m * (n + 3)), -7.0f), yr(size_t(m * (n + 3)), -7.0f);
  MatmulOperands op;
  op.w = &w;
  op.w2 = spec.op == Op::SwiGLU ? &w2 : nullptr;
  op.x = xp;
  op.ldx = ldx;
  op.ldy = ldy;
  op.r = res.data();
  op.ldr = n * 4;
  const auto& kern = global_code_cache().get(spec);
  op.y = yj.data();
  run_tile(kern, op, {0, m, 0, n});
  op.y = yr.data();
  run_tile_reference(spec, op, {0, m, 0, n});
  int64_t mismatches = 0;
  for (size_t i = 0; i < yj.size(); ++i)
    if (std::memcmp(&yj[i], &yr[i], 4) != 0 && mismatches++ < 5)
      MESSAGE("mismatch at row " << i / (n + 3) << " col " << i % (n + 3) << ": jit " << yj[i] << " ref " << yr[i]);
  CHECK_MESSAGE(mismatches == 0, spec.to_string() << " m=" << m << " n=" << n);
  for (int64_t r = 0; r < m; ++r)
    for (int64_t c = n; c < n + 3; ++c) REQUIRE(yj[size_t(r * (n + 3) + c)] == -7.0f);
}


}  // namespace ckjit::test
