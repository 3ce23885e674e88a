#include "jit/matmul_primitive.h"

#include <algorithm>

#include "runtime/error.h"

namespace ckjit::jit {
namespace {

// Fixed register blocks (where the planner gave none): GEMM 4 rows x 3 panels, GEMV 1 row x 4
// panels; SwiGLU needs an even nr. The ymm paths have 16 registers (register_block_problem): AVX2
// GEMM/SwiGLU take 2 x 2, AVX-VNNI 4 x 2. AMX works on 16-row tiles and has no GEMV.
KernelSpec fixed_spec(const MatmulDesc& d, IsaPath isa, Op op) {
  KernelSpec s;
  s.op = op;
  s.wtype = d.wtype;
  s.atype = d.atype;
  s.isa = isa;
  s.k = d.k;
  s.epilogue = op == Op::SwiGLU ? Epilogue::SwiGLU : Epilogue::Store;
  const bool single = op == Op::Gemv;
  s.mr = single ? 1 : 4;
  s.nr = op == Op::SwiGLU ? 2 : (single ? 4 : 3);
  if (is_ymm_path(isa) && !single) {
    s.mr = isa == IsaPath::AvxVnni ? 4 : 2;
    s.nr = 2;
  }
  if (isa == IsaPath::Amx && !single) {  // a 16-row tile for one row: GEMV declines to the next path
    s.mr = 16;
    s.nr = 2;
  }
  if (op == Op::Gemv) s.m_max = 1;
  return s;
}

// Weight blocks the one-row (decode) kernels prefetch ahead (AVX-512 frame; the others ignore it):
// the decode reads every weight once from DRAM. 2b decode on Sapphire Rapids, 2 threads: Gate-Up
// 23.1 -> 24.4 GB/s at 4 (2 and 8 less); the sums are unchanged.
constexpr int kDecodePrefetchBlocks = 4;
// ... and for a few rows (decode steps of several sequences): each weight is still read once from
// DRAM, now behind more work per block. 2b, 8 sequences, 2 threads, KVM guest (Xeon with AMX):
// 33-36 -> 39-42 tok/s at 8 (4 about half way; 16 and 32 less); the blocks mattered less (mr 4, 6
// or 8 within noise).
constexpr int kFewRowsPrefetchBlocks = 8;

// The kernels of `spec` from the code cache: its store (or SwiGLU) epilogue and, when asked, the
// residual-add one. Throws where the emitter rejects the spec.
MatmulChoice generated(KernelSpec spec, bool need_residual) {
  MatmulChoice out;
  out.impl = MatmulImpl::jit;
  out.store = &global_code_cache().get(spec);
  if (need_residual) {
    spec.epilogue = Epilogue::ResidualAdd;
    out.residual = &global_code_cache().get(spec);
  }
  return out;
}

// The op the generated kernel runs: SwiGLU, or GEMV for one row and GEMM for more.
Op kernel_op(const MatmulDesc& d) { return d.op == Op::SwiGLU ? Op::SwiGLU : d.rows == RowClass::one ? Op::Gemv : Op::Gemm; }

// Few rows: fixed AVX-512 blocks with prefetch, where the planned prefill kernel (made for a chunk,
// without prefetch) would read the weights from DRAM with no lead. None where AVX-512 is not a path.
MatmulChoice jit_few_rows(const MatmulDesc& d) {
  if (std::find(d.paths.begin(), d.paths.end(), IsaPath::Avx512) == d.paths.end()) return {};
  KernelSpec s = fixed_spec(d, IsaPath::Avx512, kernel_op(d));
  s.pf = kFewRowsPrefetchBlocks;
  try {
    return generated(s, d.need_residual);
  } catch (const Error&) {
    return {};
  }
}

// One or many rows: the first path that serves the op, with the plan's blocks when the plan is for
// that path (and generates), else fixed blocks. A plan names its path (the planner picks AVX-512
// over AMX unless a tuned AMX tiling says otherwise): the paths before it are passed over rather
// than run with fixed blocks.
MatmulChoice jit_rows(const MatmulDesc& d) {
  const Op op = kernel_op(d);
  const int64_t m = d.rows == RowClass::one ? 1 : std::max<int64_t>(1, d.plan_rows);
  std::vector<std::string> notes;
  std::optional<KernelSpec> planned = d.planned;
  if (planned) {
    planned->nc = 0;  // a hint only: one kernel serves every nc
    if (op == Op::Gemv) planned->m_max = 1;
  }
  const bool planned_here = planned && std::find(d.paths.begin(), d.paths.end(), planned->isa) != d.paths.end();
  for (IsaPath path : d.paths) {
    if (path == IsaPath::Amx && !amx_serves_rows(m)) continue;  // fewer rows than a tile: AVX-512, as planned
    if (planned_here && path != planned->isa) continue;
    if (planned && planned->isa == path) {
      try {
        KernelSpec spec = *planned;
        if (m == 1) spec.pf = kDecodePrefetchBlocks;
        MatmulChoice out = generated(spec, d.need_residual);
        out.planned = true;
        out.fallbacks = notes;
        return out;
      } catch (const Error& e) {
        notes.push_back(e.what());
      }
    }
    try {
      KernelSpec fixed = fixed_spec(d, path, op);
      if (m == 1) fixed.pf = kDecodePrefetchBlocks;
      MatmulChoice out = generated(fixed, d.need_residual);
      if (d.planned) notes.push_back(std::string("plan is for another path; ") + isa_name(path) + " uses fixed blocks");
      out.fallbacks = notes;
      return out;
    } catch (const Error&) {
      // This path cannot serve the op (e.g. AMX has no GEMV): the next one is tried.
    }
  }
  MatmulChoice none;
  none.fallbacks = notes;
  return none;
}

}  // namespace

bool llama_vec_dot_rows(const MatmulDesc& d) {
  const bool dot_type = d.wtype == TensorType::Q6_K || d.wtype == TensorType::Q8_0;
  return d.op == Op::Gemm && d.order != FloatOrder::own && dot_type &&
         (d.rows == RowClass::one || d.order == FloatOrder::llama_exact || d.rows_mostly_one);
}

MatmulChoice choose_matmul(const MatmulDesc& d) {
  MatmulChoice c;
  if (llama_vec_dot_rows(d)) {  // from the GGUF rows, --no-jit or not
    c.impl = MatmulImpl::llama_vec_dot;
    return c;
  }
  const bool reference = !d.allow_jit || (d.order == FloatOrder::llama_exact && d.wtype == TensorType::Q5_K);
  if (d.op == Op::Gemm && reference) {
    c.impl = MatmulImpl::reference;
    return c;
  }
  // The fused SwiGLU has no reference of its own, and --llama-order runs llama.cpp's swiglu after two
  // matmuls: two matmuls then.
  if (!d.allow_jit || (d.op == Op::SwiGLU && d.order == FloatOrder::llama_exact)) return c;
  return d.rows == RowClass::few ? jit_few_rows(d) : jit_rows(d);
}

}  // namespace ckjit::jit
