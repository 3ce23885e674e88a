#include "jit/planner/jit_operands.h"

#include "jit/code_cache.h"
#include "jit/kernel_args.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"

namespace ckjit::planner {
namespace {

// xorshift32: fast enough for the 100+ MB of an 8B FFN layer, deterministic per seed.
struct Random {
  uint32_t s;
  uint32_t next() {
    s ^= s << 13, s ^= s >> 17, s ^= s << 5;
    return s;
  }
  uint8_t byte() { return uint8_t(next() >> 24); }
  float uniform(float lo, float hi) { return lo + (hi - lo) * float(next() >> 8) / float(1u << 24); }
  uint16_t scale() { return quant::f32_to_f16(uniform(0.0005f, 0.02f)); }
};

template <class Block, class Fill>
std::vector<Block> random_blocks(int64_t n, int64_t k, int64_t block_elems, Random& r, Fill fill) {
  std::vector<Block> v(std::size_t(n * (k / block_elems)));
  for (auto& b : v) fill(b, r);
  return v;
}

jit::PackedWeights random_packed(const OpShape& s, jit::IsaPath isa, Random& r, int threads) {
  const int panel = jit::panel_cols(isa);
  switch (s.wtype) {
    case TensorType::Q4_K: {
      auto q = random_blocks<quant::BlockQ4_K>(s.n, s.k, 256, r, [](quant::BlockQ4_K& b, Random& r) {
        b.d = r.scale(), b.dmin = r.scale();
        for (auto& v : b.scales) v = r.byte();
        for (auto& v : b.qs) v = r.byte();
      });
      return jit::repack_q4_K(q.data(), s.n, s.k, panel, threads);
    }
    case TensorType::Q5_K: {
      auto q = random_blocks<quant::BlockQ5_K>(s.n, s.k, 256, r, [](quant::BlockQ5_K& b, Random& r) {
        b.d = r.scale(), b.dmin = r.scale();
        for (auto& v : b.scales) v = r.byte();
        for (auto& v : b.qh) v = r.byte();
        for (auto& v : b.qs) v = r.byte();
      });
      return jit::repack_q5_K(q.data(), s.n, s.k, panel, threads);
    }
    case TensorType::Q6_K: {
      auto q = random_blocks<quant::BlockQ6_K>(s.n, s.k, 256, r, [](quant::BlockQ6_K& b, Random& r) {
        for (auto& v : b.ql) v = r.byte();
        for (auto& v : b.qh) v = r.byte();
        for (auto& v : b.scales) v = int8_t(r.byte());
        b.d = r.scale();
      });
      return jit::repack_q6_K(q.data(), s.n, s.k, panel, threads);
    }
    case TensorType::Q8_0: {
      auto q = random_blocks<quant::BlockQ8_0>(s.n, s.k, 32, r, [](quant::BlockQ8_0& b, Random& r) {
        for (auto& v : b.qs) v = int8_t(int(r.byte()) - 128);
        b.d = r.scale();
      });
      return jit::repack_q8_0(q.data(), s.n, s.k, panel, threads);
    }
    default:
      throw Error(std::string("no JIT kernels for ") + tensor_type_info(s.wtype).name + " weights");
  }
}

}  // namespace

bool jit_supports(TensorType w) {
  return w == TensorType::Q4_K || w == TensorType::Q5_K || w == TensorType::Q6_K || w == TensorType::Q8_0;
}

JitOperands JitOperands::make(const OpShape& s, jit::IsaPath isa, uint32_t seed, int threads) {
  validate(s);
  if (!jit_supports(s.wtype))
    throw Error(std::string("no JIT kernels for ") + tensor_type_info(s.wtype).name + " weights");
  JitOperands o;
  o.shape = s;
  o.isa = isa;
  Random r{seed | 1u};
  o.w = random_packed(s, isa, r, threads);
  if (s.kind == OpKind::gate_up_swiglu) o.w2 = random_packed(s, isa, r, threads);

  // Activations: f32 in [-1, 1), quantized by the generated quantizer of the kernels' input type.
  std::vector<float> xf(std::size_t(s.m * s.k));
  for (auto& v : xf) v = r.uniform(-1.0f, 1.0f);
  jit::KernelSpec q;
  q.op = jit::Op::Quantize;
  q.wtype = TensorType::F32;
  q.atype = s.wtype == TensorType::Q8_0 ? TensorType::Q8_0 : TensorType::Q8_K;
  q.isa = isa;
  q.k = s.k;
  const bool q80 = q.atype == TensorType::Q8_0;
  o.ldx = q80 ? s.k / 32 * int64_t(sizeof(quant::BlockQ8_0)) : s.k / 256 * int64_t(sizeof(quant::BlockQ8_K));
  o.x.assign(std::size_t(s.m * o.ldx), 0);
  const jit::JitKernel& qk = jit::global_code_cache().get(q);
  qk.require_runnable();
  jit::QuantizeArgs a;
  a.x = xf.data();
  a.y = o.x.data();
  a.rows = s.m;
  a.ldx = s.k * int64_t(sizeof(float));
  a.ldy = o.ldx;
  qk.as<jit::QuantizeFn>()(&a);
  o.y.assign(std::size_t(s.m * s.n), 0.0f);
  return o;
}

jit::MatmulOperands JitOperands::operands() {
  jit::MatmulOperands op;
  op.w = &w;
  op.w2 = w2 ? &*w2 : nullptr;
  op.x = x.data();
  op.ldx = ldx;
  op.y = y.data();
  op.ldy = shape.n * int64_t(sizeof(float));
  return op;
}

}  // namespace ckjit::planner
