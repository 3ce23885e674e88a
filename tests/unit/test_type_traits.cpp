// The two type tables (runtime/quants/type_traits.h, jit/weight_kernels.h): their rows agree, and
// each row's pieces belong together — its repack and scalar twin, its dequantizer and llama.cpp's
// dot all compute the same product of the same random blocks (to rounding).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "jit/x86/emitter.h"
#include "jit/weight_kernels.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "runtime/quants/type_traits.h"

using namespace ckjit;

namespace {

constexpr TensorType kAllTypes[] = {
    TensorType::F32,  TensorType::F16,  TensorType::Q4_0, TensorType::Q4_1, TensorType::Q5_0, TensorType::Q5_1,
    TensorType::Q8_0, TensorType::Q8_1, TensorType::Q2_K, TensorType::Q3_K, TensorType::Q4_K, TensorType::Q5_K,
    TensorType::Q6_K, TensorType::Q8_K, TensorType::I8,   TensorType::I16,  TensorType::I32,  TensorType::I64,
    TensorType::F64,  TensorType::BF16};

// n rows of k elements in random blocks: any bytes, small positive f16 scales (as the planner makes them).
std::vector<uint8_t> random_blocks(TensorType t, int64_t n, int64_t k, std::mt19937& rng) {
  const TensorTypeInfo& info = tensor_type_info(t);
  std::vector<uint8_t> v(size_t(n * row_bytes(info, k)));
  for (auto& b : v) b = uint8_t(rng());
  std::uniform_real_distribution<float> scale(0.001f, 0.01f);
  for (size_t b = 0; b < v.size(); b += size_t(info.block_bytes))
    for (int16_t off : quant::type_traits(t)->f16_scale_offsets)
      if (off >= 0) {
        const uint16_t h = quant::f32_to_f16(scale(rng));
        std::memcpy(&v[b + size_t(off)], &h, 2);
      }
  return v;
}

std::vector<uint8_t> quantize_activation(TensorType a, const std::vector<float>& x) {
  const int64_t k = int64_t(x.size());
  std::vector<uint8_t> q(size_t(row_bytes(tensor_type_info(a), k)));
  if (a == TensorType::Q8_K) quant::quantize_row_q8_K(x.data(), reinterpret_cast<quant::BlockQ8_K*>(q.data()), k);
  else quant::quantize_row_q8_0_x86(x.data(), reinterpret_cast<quant::BlockQ8_0*>(q.data()), k);
  return q;
}

}  // namespace

TEST_SUITE("quants") {
  TEST_CASE("type tables: every JIT weight type has a runtime row that agrees with it") {
    int jit_types = 0;
    for (TensorType t : kAllTypes) {
      const jit::WeightKernels* w = jit::weight_kernels(t);
      const quant::TypeTraits* q = quant::type_traits(t);
      if (q) {
        CHECK(q->type == t);
        CHECK(bool(q->to_float));
        for (int16_t off : q->f16_scale_offsets) CHECK(off + 2 <= tensor_type_info(t).block_bytes);
      }
      CHECK(jit::has_weight_kernels(t) == (w != nullptr));  // the plain list hparams reads
      if (!w) continue;
      ++jit_types;
      CAPTURE(tensor_type_info(t).name);
      REQUIRE(q != nullptr);
      CHECK(w->wtype == t);
      CHECK(q->vec_dot_type == w->atype);
      CHECK(bool(q->llama_dot));
      CHECK(bool(q->from_float));
      CHECK(w->block_elems == tensor_type_info(t).block_elems);
      CHECK(jit::jit_weight_type_names().find(tensor_type_info(t).name) != std::string::npos);
      // Each path's emitter emits this type's GEMM (emitting needs no CPU support; running does).
      for (jit::IsaPath isa : {jit::IsaPath::Avx2, jit::IsaPath::AvxVnni, jit::IsaPath::Avx512, jit::IsaPath::Amx}) {
        jit::KernelSpec s;
        s.op = jit::Op::Gemm;
        s.wtype = t;
        s.atype = w->atype;
        s.isa = isa;
        s.k = 2 * quant::QK_K;
        s.mr = isa == jit::IsaPath::Amx ? 16 : 2;
        s.nr = 2;
        CAPTURE(jit::isa_name(isa));
        CHECK(jit::emit_kernel(s)->code_size() > 0);
      }
    }
    CHECK(jit_types == 4);  // Q4_K, Q5_K, Q6_K, Q8_0 today: a new row must come with its test data
    CHECK(quant::type_traits(TensorType::Q4_0) == nullptr);
    CHECK_THROWS_WITH_AS(quant::dequantize_row(TensorType::Q4_0, nullptr, nullptr, 32),
                         doctest::Contains("Q4_0 is not supported"), Error);
    CHECK_THROWS_WITH_AS(quant::quantize_row(TensorType::Q8_K, nullptr, nullptr, 256),
                         doctest::Contains("activation-only"), Error);
  }

  TEST_CASE("type tables: a row's repack + twin / its dequantizer and llama.cpp's dot agree") {
    std::mt19937 rng(7);
    const int64_t n = 19, k = 512;  // 19 rows: a partial panel on both panel widths
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> x(static_cast<size_t>(k));
    for (auto& v : x) v = u(rng);
    for (TensorType t : kAllTypes) {
      const jit::WeightKernels* w = jit::weight_kernels(t);
      if (!w) continue;
      CAPTURE(tensor_type_info(t).name);
      const quant::TypeTraits* q = quant::type_traits(t);
      const std::vector<uint8_t> blocks = random_blocks(t, n, k, rng);
      const std::vector<uint8_t> xq = quantize_activation(w->atype, x);
      std::vector<float> xd(static_cast<size_t>(k)), wd(static_cast<size_t>(k));
      quant::dequantize_row(w->atype, xq.data(), xd.data(), k);
      const int64_t rb = row_bytes(tensor_type_info(t), k);
      const int nb = int(k / w->block_elems);
      for (int panel : {8, 16}) {
        const jit::PackedWeights p = w->repack(blocks.data(), n, k, panel, 1);
        CHECK(p.block_bytes == w->panel_block_bytes(panel));
        for (int64_t r = 0; r < n; ++r) {
          q->to_float(blocks.data() + r * rb, wd.data(), k);
          double exact = 0, mag = 0;
          for (int64_t i = 0; i < k; ++i) exact += double(wd[size_t(i)]) * xd[size_t(i)], mag += std::fabs(wd[size_t(i)] * xd[size_t(i)]);
          const float twin = w->twin_dot(p.panel_ptr(r / panel), panel, int(r % panel), xq.data(), nb);
          const float llama = q->llama_dot(blocks.data() + r * rb, xq.data(), k);
          CHECK(std::fabs(twin - exact) <= 1e-4 * mag + 1e-6);
          CHECK(std::fabs(llama - exact) <= 1e-4 * mag + 1e-6);
        }
      }
    }
  }
}
