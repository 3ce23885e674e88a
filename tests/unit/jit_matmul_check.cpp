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

namespace {

// Blocks for n rows of k elements, filled in order by fill(block, byte, scale) from one generator:
// byte() draws 0..255, scale() an f16 scale.
template <class Block, class Fill>
std::vector<Block> random_blocks(int64_t n, int64_t k, int64_t block_elems, uint32_t seed, Fill fill) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte_dist(0, 255);
  std::uniform_real_distribution<float> scale_dist(0.0005f, 0.02f);
  auto byte = [&] { return byte_dist(rng); };
  auto scale = [&] { return quant::f32_to_f16(scale_dist(rng)); };
  std::vector<Block> v(size_t(n * k / block_elems));
  for (auto& b : v) fill(b, byte, scale);
  return v;
}

}  // namespace

std::vector<BlockQ4_K> random_q4k(int64_t n, int64_t k, uint32_t seed) {
  return random_blocks<BlockQ4_K>(n, k, 256, seed, [](BlockQ4_K& b, auto& byte, auto& scale) {
    b.d = scale();
    b.dmin = scale();
    for (auto& s : b.scales) s = uint8_t(byte());
    for (auto& q : b.qs) q = uint8_t(byte());
  });
}

std::vector<quant::BlockQ6_K> random_q6k(int64_t n, int64_t k, uint32_t seed) {
  return random_blocks<quant::BlockQ6_K>(n, k, 256, seed, [](quant::BlockQ6_K& b, auto& byte, auto& scale) {
    for (auto& q : b.ql) q = uint8_t(byte());
    for (auto& q : b.qh) q = uint8_t(byte());
    for (auto& s : b.scales) s = int8_t(byte() - 128);
    b.d = scale();
  });
}

std::vector<quant::BlockQ8_0> random_q80(int64_t n, int64_t k, uint32_t seed) {
  return random_blocks<quant::BlockQ8_0>(n, k, 32, seed, [](quant::BlockQ8_0& b, auto& byte, auto& scale) {
    for (auto& q : b.qs) q = int8_t(byte() - 128);
    b.d = scale();
  });
}

std::vector<quant::BlockQ5_K> random_q5k(int64_t n, int64_t k, uint32_t seed) {
  return random_blocks<quant::BlockQ5_K>(n, k, 256, seed, [](quant::BlockQ5_K& b, auto& byte, auto& scale) {
    b.d = scale();
    b.dmin = scale();
    for (auto& s : b.scales) s = uint8_t(byte());
    for (auto& q : b.qh) q = uint8_t(byte());
    for (auto& q : b.qs) q = uint8_t(byte());
  });
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

KernelSpec matmul_spec(TensorType w, Op op, int mr, int nr, int64_t k, Epilogue ep, IsaPath isa) {
  KernelSpec s;
  s.op = op;
  s.wtype = w;
  s.atype = w == TensorType::Q8_0 ? TensorType::Q8_0 : TensorType::Q8_K;
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

void check_matmul_shapes(KernelSpec spec, std::initializer_list<int64_t> ks, std::initializer_list<int64_t> ns) {
  for (int64_t k : ks)
    for (int64_t m : {1, 2, 3, 17})
      for (int64_t n : ns) {
        spec.k = k;
        check_matmul(spec, m, n, uint32_t(k + m + n));
      }
}

}  // namespace ckjit::test
