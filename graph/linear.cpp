#include "graph/linear.h"

#include <algorithm>
#include <optional>

#include "graph/layer_ops.h"
#include "jit/executor.h"
#include "jit/hand_kernels.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "jit/reference.h"
#include "jit/weight_kernels.h"
#include "runtime/error.h"
#include "runtime/quants/q8_k_native.h"
#include "runtime/quants/vec_dot_avx2.h"
#include "runtime/quants/vec_dot_x2_avx512.h"
#include "runtime/quants/quants.h"
#include "runtime/quants/type_traits.h"

namespace ckjit::graph {
namespace {

using jit::Epilogue;
using jit::KernelSpec;
using jit::Op;

// Fixed register blocks (used where the planner gave none): GEMM 4 rows x 3 panels, GEMV 1 row x
// 4 panels; SwiGLU needs an even nr. The ymm paths have 16 registers (jit::register_block_problem):
// AVX2 GEMM/SwiGLU take 2 x 2, AVX-VNNI 4 x 2. AMX works on 16-row tiles and has no GEMV.
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
  if (isa == jit::IsaPath::Amx && !single) {  // a 16-row tile for one row: GEMV declines to the next path
    s.mr = 16;
    s.nr = 2;
  }
  if (op == Op::Gemv) s.m_max = 1;
  return s;
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

// The copies of runtime's hand-written kernels, in jit::hand_copies' order; jit::hand_isa picks.
// Each gives the bytes of the portable twin (tests/unit/test_quants.cpp, test_vec_dot_x2.cpp).
constexpr DecodeDots kAvx512Dots{"two rows per zmm", "AVX2", quant::vec_dot_q6_K_q8_K_avx2, quant::vec_dot_q8_0_q8_0_avx2,
                                 quant::vec_dot_q6_K_q8_K_x2_avx512, quant::vec_dot_q6_K_q8_K_x2_rows_vnni512};
constexpr DecodeDots kAvx2Dots{"AVX2", "AVX2", quant::vec_dot_q6_K_q8_K_avx2, quant::vec_dot_q8_0_q8_0_avx2, nullptr, nullptr};
constexpr DecodeDots kPortableDots{"portable", "portable", quant::vec_dot_q6_K_q8_K, quant::vec_dot_q8_0_q8_0, nullptr, nullptr};
constexpr jit::HandCopy<const DecodeDots*> kDecodeDots[] = {
    {jit::HandIsa::avx512, &kAvx512Dots},
    {jit::HandIsa::avx2, &kAvx2Dots},
    {jit::HandIsa::portable, &kPortableDots},
};
static_assert(jit::lists_the_copies(kDecodeDots, jit::HandOp::decode_dots));

constexpr QuantizeQ8K kQ8kAvx512{"AVX-512", quant::quantize_row_q8_K_fma_avx512};
constexpr QuantizeQ8K kQ8kAvx2{"AVX2", quant::quantize_row_q8_K_fma_avx2};
constexpr QuantizeQ8K kQ8kPortable{"portable", quant::quantize_row_q8_K_fma_scalar};
constexpr jit::HandCopy<const QuantizeQ8K*> kQuantizeQ8K[] = {
    {jit::HandIsa::avx512, &kQ8kAvx512},
    {jit::HandIsa::avx2, &kQ8kAvx2},
    {jit::HandIsa::portable, &kQ8kPortable},
};
static_assert(jit::lists_the_copies(kQuantizeQ8K, jit::HandOp::q8k_quantize));

}  // namespace

int64_t act_row_bytes(TensorType act, int64_t k) {
  return act == TensorType::Q8_0 ? k / 32 * int64_t(sizeof(quant::BlockQ8_0))
                                 : k / 256 * int64_t(sizeof(quant::BlockQ8_K));
}

Linear::Linear(const gguf::TensorInfo& t, const LinearSetup& setup)
    : n_(t.ne[1]), k_(t.ne[0]), wtype_(t.type.type), llama_order_(setup.llama_decode_order),
      llama_prefill_(setup.llama_decode_order && setup.llama_prefill_order), silu_(setup.isa), name_(t.name) {
  setup_kernels(t, setup);
  const std::string wt = tensor_type_info(wtype_).name, at = tensor_type_info(atype_).name;
  desc_ = OpDesc{n_, k_, wt, at, kernel_name(kFewRows + 1), kernel_name(1)};
  if (kernel_name(2) != desc_.kernel_rows) desc_.set_few_rows(kFewRows, kernel_name(2));
  const std::string q = atype_ == TensorType::Q8_0 ? "quantize_row_q8_0 (AVX2)"
                                                   : std::string("quantize_row_q8_K (") + q8k_->name + ")";
  prepare_desc_ = OpDesc{0, k_, "", "f32 -> " + at, q, q};
}

void Linear::setup_kernels(const gguf::TensorInfo& t, const LinearSetup& setup) {
  const quant::TypeTraits* traits = quant::type_traits(wtype_);
  if (!traits || !traits->llama_dot)
    throw Error(name_ + ": ckjit cannot multiply " + std::string(tensor_type_info(wtype_).name) + " weights");
  atype_ = traits->vec_dot_type;
  llama_dot_ = traits->llama_dot;
  raw_ = t.data;
  raw_row_bytes_ = int64_t(t.row_bytes());
  const std::vector<jit::IsaPath> order = jit::isa_paths(setup.isa);
  const auto& dots = jit::pick(kDecodeDots, jit::HandOp::decode_dots, setup.isa);
  const auto& q8k = jit::pick(kQuantizeQ8K, jit::HandOp::q8k_quantize, setup.isa);
  dots_ = dots.fns, dots_isa_ = dots.isa;
  q8k_ = q8k.fns, q8k_isa_ = q8k.isa;
  test_fault_ = jit::test_fault_requested(name_);
  if (!setup.allow_jit) return;
  exact_all_ = setup.rows_mostly_one && exact_decode_dot();
  if (exact_all_) return;
  // One packed layout for every op: the panel width of the best path; the paths that share it are
  // the candidates of each op, best first.
  const int panel = jit::panel_cols(order.front());
  std::vector<jit::IsaPath> paths;
  for (jit::IsaPath p : order)
    if (jit::panel_cols(p) == panel) paths.push_back(p);
  const int64_t rows = std::max<int64_t>(1, setup.plan_rows);
  LinearPlanner* lp = setup.planner;
  gemm_ = choose(Op::Gemm, OpShape{OpKind::gemm, wtype_, rows, n_, k_}, true, paths, exact_rows(rows) ? nullptr : lp);
  gemv_ = choose(Op::Gemv, OpShape{OpKind::gemv, wtype_, 1, n_, k_}, true, paths, exact_rows(1) ? nullptr : lp);
  gemm_few_ = few_rows_kernels(Op::Gemm, paths, true);
  if (!gemm_ || !gemv_)
    throw Error(name_ + ": no JIT kernel for " + tensor_type_info(wtype_).name + " weights on " +
                jit::isa_name(paths.front()) + " (use --no-jit for the scalar reference)");
  if (setup.plan_swiglu) {
    // Plans only for the fused ops that will run (llama.cpp's swiglu replaces them in its orders).
    const bool llama_swiglu = llama_prefill_;
    swiglu_m_ = choose(Op::SwiGLU, OpShape{OpKind::gate_up_swiglu, wtype_, rows, n_, k_}, false, paths,
                       llama_prefill_ && llama_swiglu ? nullptr : lp);
    swiglu_1_ = choose(Op::SwiGLU, OpShape{OpKind::gate_up_swiglu, wtype_, 1, n_, k_}, false, paths,
                       llama_swiglu ? nullptr : lp);
    swiglu_few_ = few_rows_kernels(Op::SwiGLU, paths, false);
  }
  const jit::WeightKernels* kernels = jit::weight_kernels(wtype_);
  if (!kernels) throw Error(name_ + ": no repack for " + std::string(tensor_type_info(wtype_).name));
  packed_ = std::make_unique<jit::PackedWeights>(kernels->repack(t.data, n_, k_, panel, setup.repack_threads));
  // The GGUF rows are read again only by the exact and reference paths; otherwise the packed copy
  // is the only one kept in memory.
  if (!exact_decode_dot() && !uses_reference()) gguf::release_pages(t);
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

// Fixed AVX-512 blocks with prefetch for 2..kFewRows rows, where the planned prefill kernel (made for
// a chunk, without prefetch) would read the weights from DRAM with no lead. Empty where AVX-512 is
// not among the paths (the planned kernel serves).
Linear::OpKernels Linear::few_rows_kernels(Op op, const std::vector<jit::IsaPath>& paths, bool need_residual) const {
  const jit::IsaPath path = jit::IsaPath::Avx512;
  if (std::find(paths.begin(), paths.end(), path) == paths.end()) return {};
  KernelSpec s = spec_for(wtype_, atype_, path, k_, op, op == Op::SwiGLU ? Epilogue::SwiGLU : Epilogue::Store);
  s.pf = kFewRowsPrefetchBlocks;
  try {
    return generated(s, need_residual);
  } catch (const Error&) {
    return {};
  }
}

// The kernels of `spec` from the code cache: its store (or SwiGLU) epilogue and, when asked, the
// residual-add one. Throws where the emitter rejects the spec.
Linear::OpKernels Linear::generated(KernelSpec spec, bool need_residual) {
  OpKernels out;
  out.store = &jit::global_code_cache().get(spec);
  if (need_residual) {
    spec.epilogue = Epilogue::ResidualAdd;
    out.residual = &jit::global_code_cache().get(spec);
  }
  return out;
}

// The first path of `paths` that serves `op`: the planner's blocks when its plan is for that path
// (and generates), else the fixed blocks; a path whose emitter rejects the spec declines.
Linear::OpKernels Linear::choose(Op op, const OpShape& shape, bool need_residual,
                                 const std::vector<jit::IsaPath>& paths, LinearPlanner* lp) const {
  const Epilogue store_ep = op == Op::SwiGLU ? Epilogue::SwiGLU : Epilogue::Store;
  std::optional<planner::Plan> plan;
  if (lp) {
    try {
      plan = lp->plan(shape);
    } catch (const Error& e) {
      lp->note_fallback(shape, e.what());
    }
  }
  // A plan names its path (the planner picks AVX-512 over AMX unless a tuned AMX tiling says
  // otherwise): the paths before it are passed over rather than run with fixed blocks.
  std::optional<KernelSpec> planned;
  if (plan) {
    try {
      planned = planner::jit_spec_for(*plan);
      planned->nc = 0;  // a hint only: one kernel serves every nc
      if (op == Op::Gemv) planned->m_max = 1;
    } catch (const Error& e) {
      lp->note_fallback(shape, e.what());
    }
  }
  const bool planned_here = planned && std::find(paths.begin(), paths.end(), planned->isa) != paths.end();
  for (jit::IsaPath path : paths) {
    if (path == jit::IsaPath::Amx && !jit::amx_serves_rows(shape.m)) continue;  // fewer rows than a tile: AVX-512, as planned
    if (planned_here && path != planned->isa) continue;
    OpKernels out;
    if (planned && planned->isa == path) {
      try {
        KernelSpec spec = *planned;
        if (shape.m == 1) spec.pf = kDecodePrefetchBlocks;
        out = generated(spec, need_residual);
        out.planned = true;
        out.tiling = plan->tiling;
        out.plan_rows = shape.m;
        return out;
      } catch (const Error& e) {
        lp->note_fallback(shape, e.what());
      }
    }
    try {
      KernelSpec fixed = spec_for(wtype_, atype_, path, k_, op, store_ep);
      if (shape.m == 1) fixed.pf = kDecodePrefetchBlocks;
      out = generated(fixed, need_residual);
      if (plan && lp) lp->note_fallback(shape, std::string("plan is for another path; ") + jit::isa_name(path) + " uses fixed blocks");
      return out;
    } catch (const Error&) {
      // This path cannot serve the op (e.g. AMX has no GEMV): the next one is tried.
    }
  }
  return OpKernels{};
}

int64_t Linear::act_row_bytes() const { return graph::act_row_bytes(atype_, k_); }

bool Linear::uses_reference() const {
  return (!packed_ && !exact_all_) || (wtype_ == TensorType::Q5_K && llama_prefill_);
}

std::string Linear::describe() const {
  std::string s = std::string(tensor_type_info(wtype_).name) + " x " + tensor_type_info(atype_).name + " [" +
                  std::to_string(k_) + " -> " + std::to_string(n_) + "]: ";
  const char* dot = wtype_ == TensorType::Q6_K ? "vec_dot_q6_K_q8_K" : "vec_dot_q8_0_q8_0";
  if (exact_all_)
    return s + "every row in llama.cpp's " + dot + " order (" +
           dot_copy() + "; not repacked)";
  if (!packed_) return s + "scalar reference (--no-jit; llama.cpp's vec_dot / repacked-gemv orders)";
  if (uses_reference()) return s + "scalar reference in llama.cpp's vec_dot_q5_K_q8_K order (--llama-order)";
  auto path = [](const OpKernels& k) { return std::string(jit::isa_name(k.store->spec().isa)); };
  std::string out = exact_rows(2) ? s + "prefill rows in llama.cpp's " + dot + " order"
                                  : s + "jit gemm " + path(gemm_) + " " + gemm_.store->spec().to_string();
  if (exact_decode_dot())
    out += std::string("; decode: ") + dot_copy() + (wtype_ == TensorType::Q6_K && dots_->q6k_x2 ? " in " : " ") + dot + " order";
  else
    out += "; gemv " + path(gemv_) + " " + gemv_.store->spec().to_string();
  if (swiglu_m_) out += "; swiglu " + path(swiglu_m_) + " " + swiglu_m_.store->spec().to_string();
  if (swiglu_few_) out += "; swiglu of 2-" + std::to_string(kFewRows) + " rows " + swiglu_few_.store->spec().to_string();
  if (gemm_few_) out += "; " + std::string(exact_decode_dot() ? "prefill of " : "") + "2-" + std::to_string(kFewRows) + " rows " + gemm_few_.store->spec().to_string();
  return out;
}

std::string Linear::kernel_name(int64_t m) const {
  // The same tests in the same order as matmul().
  const char* dot = wtype_ == TensorType::Q6_K ? "vec_dot_q6_K_q8_K" : "vec_dot_q8_0_q8_0";
  if (exact_rows(m))
    return std::string("llama.cpp ") + dot + " order (" + dot_copy() + ")";
  if (uses_reference()) return "scalar reference";
  const OpKernels& k = gemm_for(m);
  return std::string(m == 1 ? "jit gemv " : "jit gemm ") + jit::isa_name(k.store->spec().isa) + " " + k.store->spec().to_string();
}

OpDesc Linear::swiglu_desc(const Linear& gate, const Linear& up) {
  OpDesc d{gate.n_ + up.n_, gate.k_, gate.desc_.weight_type + "+" + up.desc_.weight_type, gate.desc_.input_type, "", ""};
  // The same tests as swiglu().
  auto two = [&](int64_t m, const char* silu) {
    return "gate " + gate.kernel_name(m) + "; up " + up.kernel_name(m) + "; " + silu;
  };
  auto fused = [](const OpKernels& k) {
    return std::string("jit swiglu ") + jit::isa_name(k.store->spec().isa) + " " + k.store->spec().to_string();
  };
  const bool llama = llama_swiglu_decode(gate, up);
  d.kernel_row = llama ? two(1, "llama.cpp swiglu") : !fused_swiglu(gate, up) ? two(1, "silu_mul") : fused(gate.swiglu_1_);
  auto rows = [&](int64_t m) { return unfused_prefill(gate, up) ? two(m, llama ? "llama.cpp swiglu" : "silu_mul") : fused(gate.swiglu_for(m)); };
  d.kernel_rows = rows(kFewRows + 1);
  if (rows(2) != d.kernel_rows) d.set_few_rows(kFewRows, rows(2));
  return d;
}

float Linear::reference_dot(int64_t row, const void* xrow) const {
  return llama_dot_(raw_ + row * raw_row_bytes_, xrow, k_);
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

std::string Linear::dot_copy() const { return wtype_ == TensorType::Q6_K ? dots_->q6k_name : dots_->q80_name; }

bool Linear::exact_decode_dot() const {
  return llama_order_ && (wtype_ == TensorType::Q6_K || wtype_ == TensorType::Q8_0);
}

bool Linear::exact_rows(int64_t m, Rows rows) const {
  return exact_decode_dot() && (m == 1 || rows == Rows::decode || llama_prefill_ || exact_all_);
}

void Linear::exact_gemv(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual) const {
  // Tasks over column ranges; each weight row (or pair) is read once for all m activation rows.
  const int64_t chunk = std::max<int64_t>(16, (n_ + 4 * pool.size() - 1) / (4 * pool.size()));
  const int64_t col_tasks = (n_ + chunk - 1) / chunk;
  const bool q6 = wtype_ == TensorType::Q6_K;
  const int64_t xb = act_row_bytes();
  auto xrow = [&](int64_t r) { return static_cast<const uint8_t*>(xq) + r * xb; };
  auto put = [&](int64_t r, int64_t c, float v) { y[r * ldy + c] = residual ? v + residual[r * ldy + c] : v; };
  pool.run(size_t(col_tasks), [&](size_t t, int) {
    const int64_t c0 = int64_t(t) * chunk, c1 = std::min(n_, c0 + chunk);
    int64_t c = c0;
    if (q6 && dots_->q6k_x2) {
      // The same per-row float order as the AVX2 dot, two rows per pass: row i of each half of the
      // range, so the rows are read as two long sequential streams (adjacent rows would restart
      // both streams every row, and the prefetcher loses them: 40% slower decode, measured).
      // Several activation rows (decode rows of several sequences) share each unpacked block.
      const int64_t h = (c1 - c0) / 2;
      constexpr int64_t kRows = 8;
      const quant::BlockQ8_K* ys[kRows];
      float v[2 * kRows];
      for (int64_t i = 0; i < h; ++i) {
        const int64_t ca = c0 + i, cb = c0 + h + i;
        const auto* wa = reinterpret_cast<const quant::BlockQ6_K*>(raw_ + ca * raw_row_bytes_);
        const auto* wb = reinterpret_cast<const quant::BlockQ6_K*>(raw_ + cb * raw_row_bytes_);
        for (int64_t r0 = 0; r0 < m; r0 += kRows) {
          const int rows = int(std::min(kRows, m - r0));
          for (int j = 0; j < rows; ++j) ys[j] = reinterpret_cast<const quant::BlockQ8_K*>(xrow(r0 + j));
          if (rows == 1) dots_->q6k_x2(wa, wb, ys[0], k_, v);
          else dots_->q6k_x2_rows(wa, wb, ys, rows, k_, v);
          for (int j = 0; j < rows; ++j) put(r0 + j, ca, v[2 * j]), put(r0 + j, cb, v[2 * j + 1]);
        }
      }
      c = c0 + 2 * h;
    }
    for (; c < c1; ++c) {
      const uint8_t* w = raw_ + c * raw_row_bytes_;
      for (int64_t r = 0; r < m; ++r)
        put(r, c, q6 ? dots_->q6k(reinterpret_cast<const quant::BlockQ6_K*>(w), reinterpret_cast<const quant::BlockQ8_K*>(xrow(r)), k_)
                     : dots_->q80(reinterpret_cast<const quant::BlockQ8_0*>(w), reinterpret_cast<const quant::BlockQ8_0*>(xrow(r)), k_));
    }
  });
}

void Linear::prepare(Workers& pool, const float* x, int64_t ldx, int64_t m, void* xq) const {
  quantize_activations(pool, atype_, x, ldx, m, k_, xq, *q8k_);
}

void Linear::run_jit(Workers& pool, const OpKernels& ks, const jit::MatmulOperands& op, int64_t m, bool residual) const {
  const jit::JitKernel* k = residual ? ks.residual : ks.store;
  // A plan cuts the output for the rows it was made for (a prefill chunk): far fewer rows (a
  // short prompt, a multi-sequence decode step) could leave one row strip to one worker, so they
  // take the even grid instead. The tiling never changes a result.
  if (ks.planned && 4 * m >= ks.plan_rows) {
    run_planned(pool, ks.tiling, m, n_, [&](const jit::Tile& t) { jit::run_tile(*k, op, t); });
  } else {
    const int64_t align = int64_t(packed_->panel) * k->spec().nr;
    const TileGrid g = grid(m, n_, align, pool.size());
    pool.run(size_t(g.m_tiles * g.n_tiles), [&](size_t task, int) {
      const int64_t mt = int64_t(task) / g.n_tiles, nt = int64_t(task) % g.n_tiles;
      jit::Tile t{mt * g.m_chunk, std::min(m, (mt + 1) * g.m_chunk), nt * g.n_chunk, std::min(n_, (nt + 1) * g.n_chunk)};
      jit::run_tile(*k, op, t);
    });
  }
  if (test_fault_ && !jit::scalar_twins()) jit::apply_test_fault(op.y, long(m), long(op.ldy / 4));
}

void Linear::matmul(Workers& pool, const void* xq, int64_t m, float* y, int64_t ldy, const float* residual, Rows rows) const {
  if (m <= 0) return;
  if (exact_rows(m, rows)) return exact_gemv(pool, xq, m, y, ldy, residual);
  if (uses_reference()) return reference_matmul(pool, xq, m, y, ldy, residual);
  jit::MatmulOperands op;
  op.w = packed_.get();
  op.x = xq;
  op.ldx = act_row_bytes();
  op.y = y;
  op.ldy = ldy * 4;
  op.r = residual;
  op.ldr = ldy * 4;
  run_jit(pool, gemm_for(m), op, m, residual != nullptr);
}

bool Linear::llama_swiglu_decode(const Linear& gate, const Linear& up) {
  return gate.llama_prefill_;  // --llama-order only: the fused kernel is as exact on every ISA and faster
}

bool Linear::fused_swiglu(const Linear& gate, const Linear& up) {
  return gate.packed_ && up.packed_ && gate.swiglu_m_ && gate.swiglu_1_ && !gate.uses_reference() &&
         gate.wtype_ == up.wtype_ && up.packed_->panel == gate.packed_->panel && gate.n_ == up.n_ && gate.k_ == up.k_;
}

bool Linear::unfused_prefill(const Linear& gate, const Linear& up) {
  return !fused_swiglu(gate, up) || (gate.llama_prefill_ && llama_swiglu_decode(gate, up));
}

void Linear::swiglu(Workers& pool, const Linear& gate, const Linear& up, const void* xq, const void* xq_up, int64_t m,
                    float* y, int64_t ldy, float* scratch, Rows rows) {
  if (m <= 0) return;
  if (m == 1 && llama_swiglu_decode(gate, up)) {
    gate.matmul(pool, xq, 1, scratch, ldy);
    up.matmul(pool, xq_up, 1, scratch + gate.n_, ldy);
    gate.silu_.run(scratch, scratch + gate.n_, y, gate.n_);
    return;
  }
  // Decode rows of several sequences take the path of M = 1: unfused with llama.cpp's swiglu when
  // decode does so (the same per-row arithmetic as above), else the fused kernel (its M = 1 and
  // M > 1 kernels share one order).
  const bool decode_unfused = rows == Rows::decode && (llama_swiglu_decode(gate, up) || !fused_swiglu(gate, up));
  if (decode_unfused || (rows == Rows::batch && unfused_prefill(gate, up)) || (m == 1 && !fused_swiglu(gate, up))) {
    gate.matmul(pool, xq, m, y, ldy, nullptr, rows);
    up.matmul(pool, xq_up, m, scratch, ldy, nullptr, rows);
    const bool llama = llama_swiglu_decode(gate, up);
    pool.run(size_t(m), [&](size_t r, int) {
      float* yr = y + int64_t(r) * ldy;
      const float* ur = scratch + int64_t(r) * ldy;
      if (llama) return gate.silu_.run(yr, ur, yr, gate.n_);
      for (int64_t c = 0; c < gate.n_; ++c) yr[c] = jit::silu_mul_ref(yr[c], ur[c]);
    });
    return;
  }
  jit::MatmulOperands op;
  op.w = gate.packed_.get();
  op.w2 = up.packed_.get();
  op.x = xq;
  op.ldx = gate.act_row_bytes();
  op.y = y;
  op.ldy = ldy * 4;
  gate.run_jit(pool, gate.swiglu_for(m), op, m, false);
}

void quantize_activations(Workers& pool, TensorType act, const float* x, int64_t ldx, int64_t m, int64_t k, void* xq,
                          const QuantizeQ8K& q8k) {
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
  pool.run(size_t(m), [&](size_t r, int) {
    q8k.row(x + int64_t(r) * ldx, reinterpret_cast<quant::BlockQ8_K*>(out + int64_t(r) * yb), k);
  });
}

}  // namespace ckjit::graph
