#include "jit/kernels.h"

#include "jit/executor.h"
#include "jit/reference.h"
#include "runtime/error.h"

namespace ckjit::jit {

GemmArgs tile_args(const KernelSpec& spec, const MatmulOperands& op, const Tile& t) {
  const PackedWeights* w = op.w;
  if (!w || !op.x || !op.y) throw Error("matmul: missing weights, activations or output");
  if (w->type != spec.wtype || w->k != spec.k || w->panel != panel_cols(spec.isa))
    throw Error("matmul: packed weights (k=" + std::to_string(w->k) + ", panel=" + std::to_string(w->panel) +
                ") do not fit kernel " + spec.to_string());
  if (spec.op == Op::SwiGLU && (!op.w2 || op.w2->n != w->n || op.w2->k != w->k || op.w2->panel != w->panel))
    throw Error("matmul: SwiGLU needs up weights of the gate's shape");
  if (spec.epilogue == Epilogue::ResidualAdd && !op.r) throw Error("matmul: residual epilogue without residual");
  if (t.m_begin < 0 || t.m_end < t.m_begin || t.n_begin < 0 || t.n_end < t.n_begin || t.n_end > w->n ||
      t.n_begin % w->panel != 0)
    throw Error("matmul: bad tile");
  GemmArgs a;
  const int64_t p = t.n_begin / w->panel;
  a.w = w->panel_ptr(p);
  a.w2 = op.w2 ? op.w2->panel_ptr(p) : nullptr;
  a.x = static_cast<const uint8_t*>(op.x) + t.m_begin * op.ldx;
  a.ldx = op.ldx;
  a.y = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(op.y) + t.m_begin * op.ldy) + t.n_begin;
  a.ldy = op.ldy;
  if (op.r) a.r = reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(op.r) + t.m_begin * op.ldr) + t.n_begin;
  a.ldr = op.ldr;
  a.m = t.m_end - t.m_begin;
  a.n = t.n_end - t.n_begin;
  return a;
}

void run_tile(const JitKernel& k, const MatmulOperands& op, const Tile& t) {
  if (scalar_twins()) return run_tile_reference(k.spec(), op, t);
  k.require_runnable();
  GemmArgs a = tile_args(k.spec(), op, t);
  if (a.m == 0 || a.n == 0) return;
  k.as<GemmFn>()(&a);
}

void run_tile_reference(const KernelSpec& spec, const MatmulOperands& op, const Tile& t) {
  GemmArgs a = tile_args(spec, op, t);
  if (a.m == 0 || a.n == 0) return;
  reference_kernel(spec, &a);
}

IsaPath widest_dense_path(const topo::Isa& isa) {
  if (isa_runs(IsaPath::Avx512, isa)) return IsaPath::Avx512;
  if (isa_runs(IsaPath::Avx2, isa)) return IsaPath::Avx2;
  throw Error("op=dense needs at least AVX2 + FMA + F16C");
}

DenseBlock dense_block(IsaPath isa) {
  if (isa == IsaPath::Avx512) return {8, 3};  // each converted weight vector serves 8 rows
  if (isa == IsaPath::Avx2) return {4, 3};
  throw Error(std::string("op=dense has no ") + isa_name(isa) + " path (it runs on avx2 or avx512)");
}

KernelSpec dense_spec(IsaPath isa, TensorType wtype, int mr, int nr, int64_t kc, int64_t k, bool accumulate, Epilogue ep) {
  KernelSpec s;
  s.op = Op::Dense, s.wtype = wtype, s.atype = TensorType::F32, s.isa = isa;
  s.mr = mr, s.nr = nr, s.kc = int(kc), s.k = k, s.epilogue = ep, s.accumulate = accumulate;
  return s;
}

GemmFn dense_kernel(IsaPath isa, TensorType wtype, int mr, int nr, int64_t kc, int64_t k, bool accumulate, Epilogue ep) {
  const JitKernel& kern = global_code_cache().get(dense_spec(isa, wtype, mr, nr, kc, k, accumulate, ep));
  kern.require_runnable();
  return kern.as<GemmFn>();
}

}  // namespace ckjit::jit
