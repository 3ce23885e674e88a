#pragma once
// The planner: for an op and the machine, choose the register block, the cache blocks, the loop
// order, the split axis and the number of active threads by minimising the cost model, within
// the CPU budget of the topology (affinity, cpuset, quota). A tuned profile entry overrides it.
#include <optional>
#include <string>
#include <vector>

#include "jit/planner/cost_model.h"
#include "jit/planner/peak_rates.h"
#include "topology/cpu_budget.h"
#include "runtime/op_shape.h"
#include "topology/machine.h"

namespace ckjit {
struct ProfileEntry;
}

namespace ckjit::planner {

struct PlannerOptions {
  int max_threads = 0;              // > 0: at most this many (still capped by the budget)
  int exact_threads = 0;            // > 0: exactly this many (capped by the budget)
  bool allow_smt = false;           // let workers share physical cores
  std::optional<PeakRates> peaks;   // measured rates (profile); default_peak_rates() otherwise
};

struct Plan {
  OpShape shape;
  Tiling tiling;
  std::vector<int> cpus;          // one per worker, worker 0 first
  KernelTraits kernel;            // compute path, registers, bytes per element
  Cost cost;                      // expected time, bound, bytes per level
  CacheSizes caches;              // the capacities the blocks were sized for
  std::string source = "cost model";  // or "profile <path>"
  std::vector<std::string> reasons;   // a few human-readable lines

  std::string to_json() const;
};

// Register blocks the micro-kernel can hold in this ISA's registers: mr rows x nr columns with
// mr * nr/lanes accumulators + nr/lanes weight vectors + 1 broadcast + reserved <= vector_regs.
// For JIT-backed weight types only the blocks the emitters accept (jit::register_block_problem
// with nr/lanes panels x the op's weight matrices as streams).
struct RegisterBlock {
  int mr = 1, nr = 16;
};
std::vector<RegisterBlock> register_block_candidates(const KernelTraits& k, OpKind kind = OpKind::gemm);

// The JIT kernel spec that executes `plan` (register block, K, op and epilogue); throws
// ckjit::Error when the plan's weight type has no JIT kernels or its block is not emittable.
jit::KernelSpec jit_spec_for(const Plan& plan);

// The best plan by the cost model.
Plan plan_op(const OpShape& shape, const topo::Machine& m, const PlannerOptions& opts = {});

// Distinct candidates for the tuner, best first: the best plan for each thread count and the
// next-best register/cache blocks, at most `max_candidates` (>= 1).
std::vector<Plan> plan_candidates(const OpShape& shape, const topo::Machine& m, const PlannerOptions& opts,
                                  std::size_t max_candidates);

// The plan for a given tiling (used to replay a profile entry): costs it and names the cpus.
Plan plan_for_tiling(const OpShape& shape, const Tiling& tiling, const topo::Machine& m,
                     const PlannerOptions& opts = {});

// Plan from a matching profile entry when its tiling is still valid under today's budget,
// otherwise the model's plan with a reason saying why the entry was not used.
Plan plan_with_profile(const OpShape& shape, const topo::Machine& m, const ProfileEntry* entry,
                       const std::string& profile_path, const PlannerOptions& opts = {});

}  // namespace ckjit::planner
