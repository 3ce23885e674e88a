#include "graph/linear.h"

#include <algorithm>

#include "graph/layer_ops.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "jit/reference.h"
#include "runtime/error.h"
#include "runtime/quants/q8_k_native.h"
#include "runtime/quants/vec_dot_avx2.h"
#include "runtime/quants/vec_dot_x2_avx512.h"
#include "runtime/quants/quants.h"

namespace ckjit::graph {
namespace {

using jit::Epilogue;
using jit::KernelSpec;
using jit::Op;

// Register blocks: GEMM 4 rows x 3 panels, GEMV 1 row x 4 panels; SwiGLU needs an even nr. The ymm
// paths have 16 registers (jit::register_block_problem): AVX2 GEMM/SwiGLU take 2 x 2, AVX-VNNI 4 x 2.
KernelSpec spec_for(TensorType w, TensorType a, jit::IsaPath isa, int64_t k, Op op, Epilogue ep) {
  KernelSpec s;
  s.op = op;
  s.wtype = w;
  s.atype = a;
  s.isa = isa;
  s.k = k;
  s.epilogue = ep;
  const bool single = op == Op::Gemv;
  s.mr = single ? 1 : 4;
  s.nr = op == Op::SwiGLU ? 2 : (single ? 4 : 3);
  if (jit::is_ymm_path(isa) && !single) {
    s.mr = isa == jit::IsaPath::AvxVnni ? 4 : 2;
    s.nr = 2;
  }
  if (op == Op::Gemv) s.m_max = 1;
  return s;
}

const jit::JitKernel* try_kernel(const KernelSpec& s) {
  try {
    return &jit::global_code_cache().get(s);
  } catch (const Error&) {
    return nullptr;  // no emitter for this (type, op, ISA): the caller falls back
  }
}

std::unique_ptr<jit::PackedWeights> repack(const gguf::TensorInfo& t, int panel, int threads) {
  const int64_t n = t.ne[1], k = t.ne[0];
  switch (t.type.type) {
    case TensorType::Q4_K:
      return std::make_unique<jit::PackedWeights>(
          jit::repack_q4_K(reinterpret_cast<const quant::BlockQ4_K*>(t.data), n, k, panel, threads));
    case TensorType::Q6_K:
      return std::make_unique<jit::PackedWeights>(
          jit::repack_q6_K(reinterpret_cast<const quant::BlockQ6_K*>(t.data), n, k, panel, threads));
    case TensorType::Q8_0:
      return std::make_unique<jit::PackedWeights>(
          jit::repack_q8_0(reinterpret_cast<const quant::BlockQ8_0*>(t.data), n, k, panel, threads));
    default:
      return nullptr;
  }
}

// Work split of an m x n matmul into tiles: rows in chunks of up to 64, columns in chunks of
// whole panel groups, about 4 tiles per worker so uneven workers balance.
struct TileGrid {
  int64_t m_chunk, n_chunk, m_tiles, n_tiles;
};
TileGrid grid(int64_t m, int64_t n, int64_t align, int workers) {
  TileGrid g;
  g.m_chunk = std::min<int64_t>(m, 64);
  g.m_tiles = (m + g.m_chunk - 1) / g.m_chunk;
  const int64_t want_tiles = std::max<int64_t>(1, 4 * workers / g.m_tiles);
  int64_t units = (n + align - 1) / align;
  int64_t per = std::max<int64_t>(1, (units + want_tiles - 1) / want_tiles);
  g.n_chunk = per * align;
  g.n_tiles = (n + g.n_chunk - 1) / g.n_chunk;
  return g;
}

// The runtime ISA (CKJIT_MAX_ISA honoured), detected once; runtime/ kernels are chosen from it here.
const topo::Isa& run_isa() {
  static const topo::Isa isa = jit::runtime_isa();
  return isa;
}

}  // namespace

int64_t act_row_bytes(TensorType act, int64_t k) {
  return act == TensorType::Q8_0 ? k / 32 * int64_t(sizeof(quant::BlockQ8_0))
                                 : k / 256 * int64_t(sizeof(quant::BlockQ8_K));
}

Linear::Linear(const gguf::TensorInfo& t, const LinearSetup& setup)
    : n_(t.ne[1]), k_(t.ne[0]), wtype_(t.type.type), isa_(setup.isa), llama_order_(setup.llama_decode_order),
      llama_prefill_(setup.llama_decode_order && setup.llama_prefill_order), name_(t.name) {
  atype_ = wtype_ == TensorType::Q8_0 ? TensorType::Q8_0 : TensorType::Q8_K;
  raw_ = t.data;
  raw_row_bytes_ = int64_t(t.row_bytes());
  if (!setup.allow_jit) return;
  Kernels kn;
  kn.gemm = try_kernel(spec_for(wtype_, atype_, isa_, k_, Op::Gemm, Epilogue::Store));
  kn.gemv = try_kernel(spec_for(wtype_, atype_, isa_, k_, Op::Gemv, Epilogue::Store));
  kn.gemm_res = try_kernel(spec_for(wtype_, atype_, isa_, k_, Op::Gemm, Epilogue::ResidualAdd));
  kn.gemv_res = try_kernel(spec_for(wtype_, atype_, isa_, k_, Op::Gemv, Epilogue::ResidualAdd));
  kn.swiglu = try_kernel(spec_for(wtype_, atype_, isa_, k_, Op::SwiGLU, Epilogue::SwiGLU));
  if (!kn.gemm || !kn.gemv || !kn.gemm_res || !kn.gemv_res) return;
  packed_ = repack(t, jit::panel_cols(isa_), setup.repack_threads);
  if (!packed_) return;
  kern_ = kn;
  if (!setup.planner) return;
  LinearPlanner& lp = *setup.planner;
  const int64_t rows = std::max<int64_t>(1, setup.plan_rows);
  // Only the ops this weight will run through the JIT kernels (not the llama-order exact paths).
  const bool exact_rows = exact_decode_dot() && (wtype_ == TensorType::Q8_0 || llama_prefill_);
  if (!exact_rows) plan_gemm_ = planned(lp, OpShape{OpKind::gemm, wtype_, rows, n_, k_});
  if (!exact_decode_dot()) plan_gemv_ = planned(lp, OpShape{OpKind::gemv, wtype_, 1, n_, k_});
  if (kn.swiglu && setup.plan_swiglu) {
    const bool llama_swiglu = llama_order_ && swiglu_llama_available() && n_ % 16 == 0;
    if (!(llama_prefill_ && llama_swiglu))
      plan_swiglu_m_ = planned(lp, OpShape{OpKind::gate_up_swiglu, wtype_, rows, n_, k_});
    if (!llama_swiglu) plan_swiglu_1_ = planned(lp, OpShape{OpKind::gate_up_swiglu, wtype_, 1, n_, k_});
  }
}

// The kernels for the planner's plan of `shape`; empty (the fixed blocks are used) when the plan
// names no JIT kernel for this weight, another ISA, or a block the emitters reject.
Linear::Planned Linear::planned(LinearPlanner& lp, const OpShape& shape) const {
  Planned out;
  try {
    const planner::Plan& p = lp.plan(shape);
    KernelSpec spec = planner::jit_spec_for(p);
    if (spec.isa != isa_) {
      lp.note_fallback(shape, std::string("plan is for ") + jit::isa_name(spec.isa) + ", the run uses " + jit::isa_name(isa_));
      return out;
    }
    spec.nc = 0;  // a hint only: one kernel serves every nc
    if (shape.kind == OpKind::gemv) spec.m_max = 1;
    out.store = &jit::global_code_cache().get(spec);
    if (shape.kind != OpKind::gate_up_swiglu) {
      spec.epilogue = Epilogue::ResidualAdd;
      out.residual = &jit::global_code_cache().get(spec);
    }
    out.tiling = p.tiling;
  } catch (const Error& e) {
    lp.note_fallback(shape, e.what());
    return Planned{};
  }
  return out;
}

int64_t Linear::act_row_bytes() const { return graph::act_row_bytes(atype_, k_); }

std::string Linear::describe() const {
  std::string s = std::string(tensor_type_info(wtype_).name) + " x " + tensor_type_info(atype_).name + " [" +
                  std::to_string(k_) + " -> " + std::to_string(n_) + "]: ";
  if (packed_)
    return s + "jit " + jit::isa_name(isa_) + " (gemm " + (plan_gemm_ ? plan_gemm_.store : kern_.gemm)->spec().to_string() +
           "; gemv " + (plan_gemv_ ? plan_gemv_.store : kern_.gemv)->spec().to_string() + ")" +
           (exact_decode_dot() ? std::string("; decode: AVX2 ") +
                                      (wtype_ == TensorType::Q6_K ? "vec_dot_q6_K_q8_K" : "vec_dot_q8_0_q8_0") + " order"
                                : std::string());
  const char* order = wtype_ == TensorType::Q4_K   ? "repacked-gemv order"
                      : wtype_ == TensorType::Q5_K ? "vec_dot_q5_K_q8_K order"
                      : wtype_ == TensorType::Q6_K ? "vec_dot_q6_K_q8_K order"
                                                   : "vec_dot_q8_0_q8_0 order";
  return s + "scalar reference (" + order + "; no JIT kernel for this type on " + jit::isa_name(isa_) + ")";
}

float Linear::reference_dot(int64_t row, const void* xrow) const {
  const uint8_t* w = raw_ + row * raw_row_bytes_;
  switch (wtype_) {
    case TensorType::Q4_K:
      return quant::vec_dot_q4_K_q8_K_repack_gemv(reinterpret_cast<const quant::BlockQ4_K*>(w),
                                                  static_cast<const quant::BlockQ8_K*>(xrow), k_);
    case TensorType::Q5_K:
      return quant::vec_dot_q5_K_q8_K(reinterpret_cast<const quant::BlockQ5_K*>(w),
                                      static_cast<const quant::BlockQ8_K*>(xrow), k_);
    case TensorType::Q6_K:
      return quant::vec_dot_q6_K_q8_K(reinterpret_cast<const quant::BlockQ6_K*>(w),
                                      static_cast<const quant::BlockQ8_K*>(xrow), k_);
    case TensorType::Q8_0:
      return quant::vec_dot_q8_0_q8_0(reinterpret_cast<const quant::BlockQ8_0*>(w),
                                      static_cast<const quant::BlockQ8_0*>(xrow), k_);
    default:
      throw Error("linear: no reference dot product for " + std::string(tensor_type_info(wtype_).name));
  }
}

void Linear::reference_matmul(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy,
                              const float* residual) const {
  const int64_t xb = act_row_bytes();
  const TileGrid g = grid(m, n_, 16, pool.size());
  pool.run(size_t(g.m_tiles * g.n_tiles), [&](size_t task, int) {
    const int64_t mt = int64_t(task) / g.n_tiles, nt = int64_t(task) % g.n_tiles;
    const int64_t m0 = mt * g.m_chunk, m1 = std::min(m, m0 + g.m_chunk);
    const int64_t n0 = nt * g.n_chunk, n1 = std::min(n_, n0 + g.n_chunk);
    for (int64_t r = m0; r < m1; ++r) {
      const uint8_t* xr = static_cast<const uint8_t*>(xq) + r * xb;
      for (int64_t c = n0; c < n1; ++c) {
        float v = reference_dot(c, xr);
        y[r * ldy + c] = residual ? v + residual[r * ldy + c] : v;
      }
    }
  });
}

bool Linear::exact_decode_dot() const {
  static const bool avx2 = jit::isa_runs(jit::IsaPath::Avx2, run_isa());
  return llama_order_ && (wtype_ == TensorType::Q6_K || wtype_ == TensorType::Q8_0) && avx2;
}

void Linear::exact_gemv(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual) const {
  const int64_t chunk = std::max<int64_t>(16, (n_ + 4 * pool.size() - 1) / (4 * pool.size()));
  const int64_t col_tasks = (n_ + chunk - 1) / chunk;
  const bool q6 = wtype_ == TensorType::Q6_K;
  static const bool two_rows = jit::isa_runs(jit::IsaPath::Avx512, run_isa()) && run_isa().avx512dq;
  const int64_t xb = act_row_bytes();
  pool.run(size_t(m * col_tasks), [&](size_t t, int) {
    const int64_t r = int64_t(t) / col_tasks, c0 = (int64_t(t) % col_tasks) * chunk, c1 = std::min(n_, c0 + chunk);
    const void* xr = static_cast<const uint8_t*>(xq) + r * xb;
    int64_t c = c0;
    if (q6 && two_rows) {
      // The same per-row float order as the AVX2 dot, two rows per pass: row i of each half of the
      // range, so the rows are read as two long sequential streams (adjacent rows would restart
      // both streams every row, and the prefetcher loses them: 40% slower decode, measured).
      const int64_t h = (c1 - c0) / 2;
      for (int64_t i = 0; i < h; ++i) {
        const int64_t ca = c0 + i, cb = c0 + h + i;
        float v[2];
        quant::vec_dot_q6_K_q8_K_x2_avx512(reinterpret_cast<const quant::BlockQ6_K*>(raw_ + ca * raw_row_bytes_),
                                           reinterpret_cast<const quant::BlockQ6_K*>(raw_ + cb * raw_row_bytes_),
                                           static_cast<const quant::BlockQ8_K*>(xr), k_, v);
        y[r * ldy + ca] = residual ? v[0] + residual[r * ldy + ca] : v[0];
        y[r * ldy + cb] = residual ? v[1] + residual[r * ldy + cb] : v[1];
      }
      c = c0 + 2 * h;
    }
    for (; c < c1; ++c) {
      const uint8_t* w = raw_ + c * raw_row_bytes_;
      const float v = q6 ? quant::vec_dot_q6_K_q8_K_avx2(reinterpret_cast<const quant::BlockQ6_K*>(w),
                                                          static_cast<const quant::BlockQ8_K*>(xr), k_)
                         : quant::vec_dot_q8_0_q8_0_avx2(reinterpret_cast<const quant::BlockQ8_0*>(w),
                                                          static_cast<const quant::BlockQ8_0*>(xr), k_);
      y[r * ldy + c] = residual ? v + residual[r * ldy + c] : v;
    }
  });
}

void Linear::matmul(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual) const {
  if (m <= 0) return;
  // Q8_0: llama.cpp's vec_dot order for every row (its batched path is tinyBLAS, whose order is not
  // reproduced; the single-row order keeps batched prefill equal to llama.cpp's token-by-token path).
  if ((m == 1 || wtype_ == TensorType::Q8_0 || llama_prefill_) && exact_decode_dot())
    return exact_gemv(pool, xq, m, y, ldy, residual);
  if (!packed_) return reference_matmul(pool, xq, m, y, ldy, residual);
  const bool single = m == 1;
  const Planned& pl = single ? plan_gemv_ : plan_gemm_;
  const jit::JitKernel* k = pl ? (residual ? pl.residual : pl.store)
                               : residual ? (single ? kern_.gemv_res : kern_.gemm_res) : (single ? kern_.gemv : kern_.gemm);
  jit::MatmulOperands op;
  op.w = packed_.get();
  op.x = xq;
  op.ldx = act_row_bytes();
  op.y = y;
  op.ldy = ldy * 4;
  op.r = residual;
  op.ldr = ldy * 4;
  if (pl) return run_planned(pool, pl.tiling, m, n_, [&](const jit::Tile& t) { jit::run_tile(*k, op, t); });
  const int64_t align = int64_t(packed_->panel) * k->spec().nr;
  const TileGrid g = grid(m, n_, align, pool.size());
  pool.run(size_t(g.m_tiles * g.n_tiles), [&](size_t task, int) {
    const int64_t mt = int64_t(task) / g.n_tiles, nt = int64_t(task) % g.n_tiles;
    jit::Tile t{mt * g.m_chunk, std::min(m, (mt + 1) * g.m_chunk), nt * g.n_chunk, std::min(n_, (nt + 1) * g.n_chunk)};
    jit::run_tile(*k, op, t);
  });
}

bool Linear::llama_swiglu_decode(const Linear& gate, const Linear& up) {
  return gate.llama_order_ && swiglu_llama_available() && gate.n_ % 16 == 0;
}

bool Linear::fused_swiglu(const Linear& gate, const Linear& up) {
  return gate.packed_ && up.packed_ && gate.kern_.swiglu && gate.wtype_ == up.wtype_ && up.packed_->panel == gate.packed_->panel && gate.n_ == up.n_ &&
         gate.k_ == up.k_;
}

void Linear::swiglu(Workers& pool, const Linear& gate, const Linear& up, const void* xq, const void* xq_up, int64_t m,
                    float* y, int64_t ldy, float* scratch) {
  if (m <= 0) return;
  if (m == 1 && llama_swiglu_decode(gate, up)) {
    gate.matmul(pool, xq, 1, scratch, ldy);
    up.matmul(pool, xq_up, 1, scratch + gate.n_, ldy);
    swiglu_llama(scratch, scratch + gate.n_, y, gate.n_);
    return;
  }
  if (!fused_swiglu(gate, up) || (gate.llama_prefill_ && llama_swiglu_decode(gate, up))) {
    gate.matmul(pool, xq, m, y, ldy);
    up.matmul(pool, xq_up, m, scratch, ldy);
    const bool llama = llama_swiglu_decode(gate, up);
    pool.run(size_t(m), [&](size_t r, int) {
      float* yr = y + int64_t(r) * ldy;
      const float* ur = scratch + int64_t(r) * ldy;
      if (llama) return swiglu_llama(yr, ur, yr, gate.n_);
      for (int64_t c = 0; c < gate.n_; ++c) yr[c] = jit::silu_mul_ref(yr[c], ur[c]);
    });
    return;
  }
  const Planned& pl = m == 1 ? gate.plan_swiglu_1_ : gate.plan_swiglu_m_;
  const jit::JitKernel* k = pl ? pl.store : gate.kern_.swiglu;
  jit::MatmulOperands op;
  op.w = gate.packed_.get();
  op.w2 = up.packed_.get();
  op.x = xq;
  op.ldx = gate.act_row_bytes();
  op.y = y;
  op.ldy = ldy * 4;
  if (pl) return run_planned(pool, pl.tiling, m, gate.n_, [&](const jit::Tile& t) { jit::run_tile(*k, op, t); });
  const int64_t align = int64_t(gate.packed_->panel) * k->spec().nr;
  const TileGrid g = grid(m, gate.n_, align, pool.size());
  pool.run(size_t(g.m_tiles * g.n_tiles), [&](size_t task, int) {
    const int64_t mt = int64_t(task) / g.n_tiles, nt = int64_t(task) % g.n_tiles;
    jit::Tile t{mt * g.m_chunk, std::min(m, (mt + 1) * g.m_chunk), nt * g.n_chunk,
                std::min(gate.n_, (nt + 1) * g.n_chunk)};
    jit::run_tile(*k, op, t);
  });
}

void quantize_activations(Workers& pool, TensorType act, const float* x, int64_t ldx, int64_t m, int64_t k, void* xq) {
  const int64_t yb = act_row_bytes(act, k);
  uint8_t* out = static_cast<uint8_t*>(xq);
  if (act == TensorType::Q8_0) {
    pool.run(size_t(m), [&](size_t r, int) {
      quant::quantize_row_q8_0_x86(x + int64_t(r) * ldx, reinterpret_cast<quant::BlockQ8_0*>(out + int64_t(r) * yb), k);
    });
    return;
  }
  // Q8_K: llama.cpp's reference quantizer as a native build compiles it (FMA-contracted rounding,
  // see q8_k_native.h). The JIT quantizer follows the uncontracted reference, so it is not used here.
  static const auto quantize = run_isa().avx512f && run_isa().avx512bw ? quant::quantize_row_q8_K_fma_avx512
                                                                         : quant::quantize_row_q8_K_fma_scalar;
  pool.run(size_t(m), [&](size_t r, int) {
    quantize(x + int64_t(r) * ldx, reinterpret_cast<quant::BlockQ8_K*>(out + int64_t(r) * yb), k);
  });
}

}  // namespace ckjit::graph
