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

using jit::MatmulImpl;
using jit::Op;
using jit::RowClass;

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
    : n_(t.ne[1]), k_(t.ne[0]), wtype_(t.type.type), llama_prefill_(setup.llama_decode_order && setup.llama_prefill_order),
      silu_(setup.isa), name_(t.name) {
  setup_kernels(t, setup);
  const std::string wt = tensor_type_info(wtype_).name, at = tensor_type_info(atype_).name;
  desc_ = OpDesc{n_, k_, wt, at, kernel_name(jit::kFewRows + 1), kernel_name(1)};
  if (kernel_name(2) != desc_.kernel_rows) desc_.set_few_rows(jit::kFewRows, kernel_name(2));
  if (gemv_.runs(MatmulImpl::llama_vec_dot)) desc_.kernel_decode = kernel_name(1);  // matmul(): Rows::decode
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
  const auto& dots = jit::pick(kDecodeDots, jit::HandOp::decode_dots, setup.isa);
  const auto& q8k = jit::pick(kQuantizeQ8K, jit::HandOp::q8k_quantize, setup.isa);
  dots_ = dots.fns, dots_isa_ = dots.isa;
  q8k_ = q8k.fns, q8k_isa_ = q8k.isa;
  test_fault_ = jit::test_fault_requested(name_);
  // One packed layout for every op: the panel width of the best path; the paths that share it are
  // the candidates of each op, best first.
  const std::vector<jit::IsaPath> order = jit::isa_paths(setup.isa);
  const int panel = jit::panel_cols(order.front());
  std::vector<jit::IsaPath> paths;
  for (jit::IsaPath p : order)
    if (jit::panel_cols(p) == panel) paths.push_back(p);
  gemm_ = choose(Op::Gemm, RowClass::many, setup, paths, true);
  gemv_ = choose(Op::Gemm, RowClass::one, setup, paths, true);
  gemm_few_ = choose(Op::Gemm, RowClass::few, setup, paths, true);
  if (!gemm_few_.c) gemm_few_ = gemm_;
  if (!gemm_.c || !gemv_.c)
    throw Error(name_ + ": no JIT kernel for " + tensor_type_info(wtype_).name + " weights on " +
                jit::isa_name(paths.front()) + " (use --no-jit for the scalar reference)");
  if (setup.plan_swiglu) {
    swiglu_m_ = choose(Op::SwiGLU, RowClass::many, setup, paths, false);
    swiglu_1_ = choose(Op::SwiGLU, RowClass::one, setup, paths, false);
    swiglu_few_ = choose(Op::SwiGLU, RowClass::few, setup, paths, false);
    if (!swiglu_few_.c) swiglu_few_ = swiglu_m_;
  }
  const bool jit_runs = gemm_.runs(MatmulImpl::jit) || gemv_.runs(MatmulImpl::jit) || gemm_few_.runs(MatmulImpl::jit) ||
                        swiglu_m_.runs(MatmulImpl::jit);
  if (!jit_runs) return;  // the GGUF rows serve (vec_dot, reference): no packed copy
  const jit::WeightKernels* kernels = jit::weight_kernels(wtype_);
  if (!kernels) throw Error(name_ + ": no repack for " + std::string(tensor_type_info(wtype_).name));
  packed_ = std::make_unique<jit::PackedWeights>(kernels->repack(t.data, n_, k_, panel, setup.repack_threads));
  // The GGUF rows are read again only by the vec_dot and reference paths; otherwise the packed
  // copy is the only one kept in memory.
  if (!gemv_.runs(MatmulImpl::llama_vec_dot) && !uses_reference()) gguf::release_pages(t);
}

jit::MatmulDesc Linear::desc(Op op, RowClass rows, const LinearSetup& setup) const {
  jit::MatmulDesc d;
  d.op = op;
  d.wtype = wtype_;
  d.atype = atype_;
  d.k = k_;
  d.rows = rows;
  d.plan_rows = std::max<int64_t>(1, setup.plan_rows);
  d.order = !setup.llama_decode_order ? jit::FloatOrder::own
            : llama_prefill_          ? jit::FloatOrder::llama_exact
                                      : jit::FloatOrder::llama_decode;
  d.allow_jit = setup.allow_jit;
  d.rows_mostly_one = setup.rows_mostly_one && setup.allow_jit;  // --no-jit: the reference wherever decode is not
  return d;
}

// The primitive's answer for one row class. The planner is asked only where generated kernels
// will run: not for rows in llama.cpp's vec_dot order or the reference, and not for the fused
// SwiGLU under --llama-order (llama.cpp's swiglu replaces it there), nor for few rows (fixed
// prefetching blocks).
Linear::Chosen Linear::choose(Op op, RowClass rows, const LinearSetup& setup, const std::vector<jit::IsaPath>& paths,
                              bool need_residual) const {
  jit::MatmulDesc d = desc(op, rows, setup);
  d.paths = paths;
  d.need_residual = need_residual;
  const int64_t m = rows == RowClass::one ? 1 : d.plan_rows;
  const OpShape shape{op == Op::SwiGLU ? OpKind::gate_up_swiglu : m == 1 ? OpKind::gemv : OpKind::gemm, wtype_, m, n_, k_};
  const bool jit_only = !jit::llama_vec_dot_rows(d) && d.allow_jit &&
                        !(d.order == jit::FloatOrder::llama_exact && (wtype_ == TensorType::Q5_K || op == Op::SwiGLU));
  std::optional<planner::Plan> plan;
  LinearPlanner* lp = setup.planner;
  if (lp && jit_only && rows != RowClass::few) {
    try {
      plan = lp->plan(shape);
    } catch (const Error& e) {
      lp->note_fallback(shape, e.what());
    }
  }
  if (plan) {
    try {
      d.planned = planner::jit_spec_for(*plan);
    } catch (const Error& e) {
      lp->note_fallback(shape, e.what());
    }
  }
  Chosen out;
  out.c = jit::choose_matmul(d);
  if (lp)
    for (const std::string& why : out.c.fallbacks) lp->note_fallback(shape, why);
  if (out.c.planned) out.tiling = plan->tiling, out.plan_rows = m;
  return out;
}

int64_t Linear::act_row_bytes() const { return graph::act_row_bytes(atype_, k_); }

bool Linear::uses_reference() const {
  return gemm_.runs(MatmulImpl::reference) || gemv_.runs(MatmulImpl::reference) || gemm_few_.runs(MatmulImpl::reference);
}

std::string Linear::describe() const {
  std::string s = std::string(tensor_type_info(wtype_).name) + " x " + tensor_type_info(atype_).name + " [" +
                  std::to_string(k_) + " -> " + std::to_string(n_) + "]: ";
  const char* dot = wtype_ == TensorType::Q6_K ? "vec_dot_q6_K_q8_K" : "vec_dot_q8_0_q8_0";
  const bool decode_dot = gemv_.runs(MatmulImpl::llama_vec_dot);
  if (decode_dot && gemm_.runs(MatmulImpl::llama_vec_dot) && !packed_)
    return s + "every row in llama.cpp's " + dot + " order (" + dot_copy() + "; not repacked)";
  if (gemm_.runs(MatmulImpl::reference))
    return s + (wtype_ == TensorType::Q5_K && llama_prefill_ ? "scalar reference in llama.cpp's vec_dot_q5_K_q8_K order (--llama-order)"
                                                             : "scalar reference (--no-jit; llama.cpp's vec_dot / repacked-gemv orders)");
  auto path = [](const Chosen& k) { return std::string(jit::isa_name(k.c.store->spec().isa)); };
  std::string out = gemm_.runs(MatmulImpl::llama_vec_dot) ? s + "prefill rows in llama.cpp's " + dot + " order"
                                                          : s + "jit gemm " + path(gemm_) + " " + gemm_.c.store->spec().to_string();
  if (decode_dot)
    out += std::string("; decode: ") + dot_copy() + (wtype_ == TensorType::Q6_K && dots_->q6k_x2 ? " in " : " ") + dot + " order";
  else
    out += "; gemv " + path(gemv_) + " " + gemv_.c.store->spec().to_string();
  const std::string few = "2-" + std::to_string(jit::kFewRows) + " rows ";
  if (swiglu_m_.runs(MatmulImpl::jit)) out += "; swiglu " + path(swiglu_m_) + " " + swiglu_m_.c.store->spec().to_string();
  if (swiglu_1_.runs(MatmulImpl::jit) && swiglu_1_.c.store != swiglu_m_.c.store)
    out += "; swiglu of 1 row " + swiglu_1_.c.store->spec().to_string();
  if (swiglu_few_.runs(MatmulImpl::jit) && swiglu_few_.c.store != swiglu_m_.c.store)
    out += "; swiglu of " + few + swiglu_few_.c.store->spec().to_string();
  if (gemm_few_.runs(MatmulImpl::jit) && gemm_few_.c.store != gemm_.c.store)
    out += "; " + std::string(decode_dot ? "prefill of " : "") + few + gemm_few_.c.store->spec().to_string();
  return out;
}

std::string Linear::kernel_name(int64_t m) const {
  const Chosen& k = gemm_for(m);
  const char* dot = wtype_ == TensorType::Q6_K ? "vec_dot_q6_K_q8_K" : "vec_dot_q8_0_q8_0";
  if (k.runs(MatmulImpl::llama_vec_dot)) return std::string("llama.cpp ") + dot + " order (" + dot_copy() + ")";
  if (k.runs(MatmulImpl::reference)) return "scalar reference";
  return std::string(m == 1 ? "jit gemv " : "jit gemm ") + jit::isa_name(k.c.store->spec().isa) + " " + k.c.store->spec().to_string();
}

OpDesc Linear::swiglu_desc(const Linear& gate, const Linear& up) {
  OpDesc d{gate.n_ + up.n_, gate.k_, gate.desc_.weight_type + "+" + up.desc_.weight_type, gate.desc_.input_type, "", ""};
  // The same tests as swiglu().
  auto two = [&](int64_t m, const char* silu) {
    return "gate " + gate.kernel_name(m) + "; up " + up.kernel_name(m) + "; " + silu;
  };
  auto fused = [](const Chosen& k) {
    return std::string("jit swiglu ") + jit::isa_name(k.c.store->spec().isa) + " " + k.c.store->spec().to_string();
  };
  const bool llama = llama_swiglu_decode(gate, up);
  d.kernel_row = llama ? two(1, "llama.cpp swiglu") : !fused_swiglu(gate, up) ? two(1, "silu_mul") : fused(gate.swiglu_1_);
  auto rows = [&](int64_t m) { return unfused_prefill(gate, up) ? two(m, llama ? "llama.cpp swiglu" : "silu_mul") : fused(gate.swiglu_for(m)); };
  d.kernel_rows = rows(jit::kFewRows + 1);
  if (rows(2) != d.kernel_rows) d.set_few_rows(jit::kFewRows, rows(2));
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

void Linear::run_jit(Workers& pool, const Chosen& ks, const jit::MatmulOperands& op, int64_t m, bool residual) const {
  const jit::JitKernel* k = residual ? ks.c.residual : ks.c.store;
  // A plan cuts the output for the rows it was made for (a prefill chunk): far fewer rows (a
  // short prompt, a multi-sequence decode step) could leave one row strip to one worker, so they
  // take the even grid instead. The tiling never changes a result.
  if (ks.c.planned && 4 * m >= ks.plan_rows) {
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
  if (vec_dot_rows(m, rows)) return exact_gemv(pool, xq, m, y, ldy, residual);
  const Chosen& c = gemm_for(m);
  if (c.runs(MatmulImpl::reference)) return reference_matmul(pool, xq, m, y, ldy, residual);
  jit::MatmulOperands op;
  op.w = packed_.get();
  op.x = xq;
  op.ldx = act_row_bytes();
  op.y = y;
  op.ldy = ldy * 4;
  op.r = residual;
  op.ldr = ldy * 4;
  run_jit(pool, c, op, m, residual != nullptr);
}

bool Linear::llama_swiglu_decode(const Linear& gate, const Linear& up) {
  return gate.llama_prefill_;  // --llama-order only: the fused kernel is as exact on every ISA and faster
}

bool Linear::fused_swiglu(const Linear& gate, const Linear& up) {
  return gate.packed_ && up.packed_ && gate.swiglu_m_.runs(MatmulImpl::jit) && gate.swiglu_1_.runs(MatmulImpl::jit) &&
         !gate.uses_reference() &&
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
