#include "jit/planner/jit_runner.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "jit/isa_select.h"
#include "jit/planner/task_grid.h"
#include "runtime/error.h"

namespace ckjit::planner {
namespace {

// The vector path whose panels the operands are packed for: AVX-512 with VNNI (its panels also
// feed the AMX kernels the planner picks for M > 1), else AVX-VNNI (VEX), else AVX2.
std::optional<jit::IsaPath> runnable_path(const topo::Isa& isa) {
  if (jit::isa_runs(jit::IsaPath::Avx512, isa)) return jit::IsaPath::Avx512;
  if (jit::isa_runs(jit::IsaPath::AvxVnni, isa)) return jit::IsaPath::AvxVnni;
  if (jit::isa_runs(jit::IsaPath::Avx2, isa)) return jit::IsaPath::Avx2;
  return std::nullopt;
}

jit::PackedWeights clone(const jit::PackedWeights& w) {
  jit::PackedWeights c;
  c.type = w.type, c.n = w.n, c.k = w.k, c.panel = w.panel, c.n_panels = w.n_panels;
  c.block_bytes = w.block_bytes, c.panel_stride = w.panel_stride;
  const std::size_t bytes = (std::size_t(w.bytes()) + 63) / 64 * 64;
  c.data.reset(static_cast<uint8_t*>(std::aligned_alloc(64, bytes)));
  if (!c.data) throw Error("jit runner: out of memory for a weight copy");
  std::memcpy(c.data.get(), w.data.get(), std::size_t(w.bytes()));
  return c;
}

}  // namespace

JitRunner::JitRunner(double max_macs, std::size_t cold_bytes, const topo::Isa& isa)
    : max_macs_(max_macs), cold_bytes_(cold_bytes), target_(isa), isa_(runnable_path(isa)) {}

std::string JitRunner::name() const {
  return std::string("jit (generated kernels, ") + (isa_ ? jit::isa_name(*isa_) : "none runnable") + ")";
}

std::string JitRunner::cannot_run(const OpShape& s) const {
  if (!isa_) return "this CPU (or CKJIT_MAX_ISA) runs none of the AVX-512 VNNI, AVX-VNNI and AVX2 kernels";
  if (!jit_supports(s.wtype))
    return std::string("no JIT kernels for ") + tensor_type_info(s.wtype).name + " weights (Q4_K, Q5_K, Q6_K, Q8_0)";
  if (s.macs() > max_macs_) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "%.3g GMAC is beyond this runner's limit of %.3g GMAC", s.macs() / 1e9,
                  max_macs_ / 1e9);
    return buf;
  }
  return "";
}

void JitRunner::prepare(const OpShape& s) {
  std::string why = cannot_run(s);
  if (!why.empty()) throw Error("jit runner: " + s.key() + ": " + why);
  ops_.reset();  // free the previous shape's operands before building the next
  copies_.clear();
  next_copy_ = last_copy_ = 0;
  ops_ = JitOperands::make(s, *isa_, 12345u, 2);
  const std::size_t mats = ops_->w2 ? 2 : 1;
  const std::size_t wbytes = std::size_t(ops_->w.bytes()) * mats;
  // Copies so that ~cold_bytes stream between two uses of one; at most 1 GiB of copies.
  std::size_t extra = wbytes && cold_bytes_ > wbytes ? (cold_bytes_ + wbytes - 1) / wbytes - 1 : 0;
  extra = std::min(extra, (std::size_t(1) << 30) / std::max<std::size_t>(wbytes, 1));
  for (std::size_t c = 0; c < extra; ++c) {
    copies_.push_back(clone(ops_->w));
    if (ops_->w2) copies_.push_back(clone(*ops_->w2));
  }
}

const jit::JitKernel& JitRunner::kernel_for(const Plan& plan) {
  jit::KernelSpec spec = jit_spec_for(plan);
  // AMX GEMMs read the AVX-512 panels (same width): the planner gives M > 1 ops to AMX where it runs.
  const bool same_panels = jit::panel_cols(spec.isa) == jit::panel_cols(*isa_) && jit::isa_runs(spec.isa, target_);
  if (spec.isa != *isa_ && !same_panels)
    throw Error(std::string("jit runner: the plan wants ") + jit::isa_name(spec.isa) + " kernels; this process runs " +
                jit::isa_name(*isa_));
  spec.nc = 0;  // a hint only: the same code serves every nc, so share one kernel
  const std::string key = spec.to_string();
  auto it = kernels_.find(key);
  if (it == kernels_.end()) it = kernels_.emplace(key, &jit::global_code_cache().get(spec)).first;
  return *it->second;
}

void JitRunner::run(const Plan& plan, ThreadPool& pool) {
  if (!ops_ || !(plan.shape == ops_->shape)) throw Error("jit runner: prepare() was not called for " + plan.shape.key());
  const Tiling& t = plan.tiling;
  if (t.threads != pool.size())
    throw Error("jit runner: tiling wants " + std::to_string(t.threads) + " threads, pool has " +
                std::to_string(pool.size()));
  if (t.mc < 1 || t.nc < 1) throw Error("jit runner: blocks must be positive");
  const jit::JitKernel& k = kernel_for(plan);
  k.require_runnable();
  jit::MatmulOperands op = ops_->operands();
  const std::size_t mats = ops_->w2 ? 2 : 1, n_copies = 1 + copies_.size() / mats;
  last_copy_ = next_copy_;
  next_copy_ = (next_copy_ + 1) % n_copies;
  if (last_copy_ > 0) {
    op.w = &copies_[(last_copy_ - 1) * mats];
    if (ops_->w2) op.w2 = &copies_[(last_copy_ - 1) * mats + 1];
  }
  const TaskGrid grid{plan.shape, t};
  pool.run(grid.tasks(), [&](std::size_t task, int) {
    for_each_tile(t, grid.rows(task), grid.cols(task),
                  [&](Range r, Range c) { jit::run_tile(k, op, {r.begin, r.end, c.begin, c.end}); });
  });
}

const std::vector<float>& JitRunner::output() const {
  if (!ops_) throw Error("jit runner: nothing prepared");
  return ops_->y;
}

std::vector<float> JitRunner::reference_output() {
  if (!ops_) throw Error("jit runner: nothing prepared");
  const OpShape& s = ops_->shape;
  jit::KernelSpec spec;
  spec.op = s.kind == OpKind::gate_up_swiglu ? jit::Op::SwiGLU : s.kind == OpKind::gemv ? jit::Op::Gemv : jit::Op::Gemm;
  spec.epilogue = s.kind == OpKind::gate_up_swiglu ? jit::Epilogue::SwiGLU : jit::Epilogue::Store;
  spec.wtype = s.wtype;
  spec.atype = s.wtype == TensorType::Q8_0 ? TensorType::Q8_0 : TensorType::Q8_K;
  spec.isa = *isa_;
  spec.mr = 1;
  spec.nr = s.weight_matrices();
  spec.k = s.k;
  std::vector<float> y(std::size_t(s.m * s.n), 0.0f);
  jit::MatmulOperands op = ops_->operands();
  op.y = y.data();
  jit::run_tile_reference(spec, op, {0, s.m, 0, s.n});
  return y;
}

}  // namespace ckjit::planner
