#include "jit/planner/jit_operands.h"

#include <cstring>

#include "jit/code_cache.h"
#include "jit/kernel_args.h"
#include "jit/weight_kernels.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "runtime/quants/type_traits.h"

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

// Random bytes in every block (any bit pattern is a valid encoding of the table's types), then
// small positive f16 scales, so the sums stay finite.
jit::PackedWeights random_packed(const OpShape& s, jit::IsaPath isa, Random& r, int threads) {
  const jit::WeightKernels* kernels = jit::weight_kernels(s.wtype);
  const quant::TypeTraits* traits = quant::type_traits(s.wtype);
  if (!kernels || !traits) throw Error(std::string("no JIT kernels for ") + tensor_type_info(s.wtype).name + " weights");
  const TensorTypeInfo& info = tensor_type_info(s.wtype);
  std::vector<uint8_t> blocks(std::size_t(s.n * row_bytes(info, s.k)));
  for (auto& v : blocks) v = r.byte();
  for (std::size_t b = 0; b < blocks.size(); b += std::size_t(info.block_bytes))
    for (int16_t off : traits->f16_scale_offsets) {
      if (off < 0) continue;
      const uint16_t h = r.scale();
      std::memcpy(&blocks[b + std::size_t(off)], &h, sizeof h);
    }
  return kernels->repack(blocks.data(), s.n, s.k, jit::panel_cols(isa), threads);
}

}  // namespace

bool jit_supports(TensorType w) { return jit::weight_kernels(w) != nullptr; }

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
  q.atype = jit::weight_kernels(s.wtype)->atype;
  q.isa = isa;
  q.k = s.k;
  o.ldx = row_bytes(tensor_type_info(q.atype), s.k);
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
