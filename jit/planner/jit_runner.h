#pragma once
// The tuner's runner for the generated kernels: prepare() builds random operands of the op's
// weight type in the kernels' layouts (jit_operands.h); run() takes the kernel the plan's tiling
// names (jit_spec_for: register block mr x nr, K, op) from the code cache and cuts the output
// into the plan's tasks (task_grid.h) and, inside a task, into mc x nc tiles in the plan's loop
// order, each one run_tile call (n_begin a multiple of the weight panel).
#include <map>
#include <optional>
#include <string>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/planner/jit_operands.h"
#include "jit/planner/op_runner.h"

namespace ckjit::planner {

class JitRunner : public OpRunner {
 public:
  // max_macs: shapes beyond it are skipped (time, not correctness); the default covers an 8B
  // model's FFN at a 1k-token prefill. cold_bytes > 0: when the weights are smaller, run() cycles
  // through enough identical copies of them to stream that many bytes between two uses of one
  // copy (pass ~2 x L3), so every run reads its weights from DRAM as a model's forward pass does;
  // a decode GEMV timed on cache-hot weights would tune for the wrong bound.
  // isa: what the measured load will run (a capped load's target); by default this process's.
  explicit JitRunner(double max_macs = 1e12, std::size_t cold_bytes = 0, const topo::Isa& isa = jit::runtime_isa());
  std::string name() const override;
  std::string cannot_run(const OpShape& shape) const override;
  void prepare(const OpShape& shape) override;
  void run(const Plan& plan, ThreadPool& pool) override;

  // The last run's output (M x N) and the same op by the kernels' scalar twin on one tile.
  const std::vector<float>& output() const;
  std::vector<float> reference_output();

 private:
  const jit::JitKernel& kernel_for(const Plan& plan);

  double max_macs_;
  std::size_t cold_bytes_;
  topo::Isa target_;
  std::optional<jit::IsaPath> isa_;
  std::optional<JitOperands> ops_;
  std::vector<jit::PackedWeights> copies_;  // [copy][matrix] extra weight copies for cold runs
  std::size_t next_copy_ = 0, last_copy_ = 0;  // 0 = ops_'s own weights
  std::map<std::string, const jit::JitKernel*> kernels_;  // spec text -> emitted kernel
};

}  // namespace ckjit::planner
