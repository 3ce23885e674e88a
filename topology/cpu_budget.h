#pragma once
// Which cpus the kernels may run on and how many threads may be active at once, from the
// topology: sched affinity ∩ cgroup cpuset, capped by floor(cgroup quota). Worker cpus are taken
// one per physical core first; SMT siblings only when asked (the tuner measures whether they help).
#include <string>
#include <vector>

#include "runtime/thread_pool.h"
#include "topology/machine.h"

namespace ckjit {

struct CpuBudget {
  std::vector<int> cpus;            // usable OS cpu ids (affinity ∩ cpuset), sorted
  std::vector<std::vector<int>> cores;  // usable cpus grouped by physical core (SMT siblings together)
  int max_threads = 1;              // never more active threads than this
  bool quota_enforced = false;      // a cgroup CPU quota exists: workers must not spin
  std::vector<std::string> reasons; // how the numbers were reached, for `ckjit plan`
};

CpuBudget cpu_budget(const topo::Machine& m);

// Cpus for `threads` workers (capped by the budget): the first usable cpu of each physical core,
// then, only when allow_smt, the remaining siblings round-robin over cores.
std::vector<int> choose_worker_cpus(const CpuBudget& budget, int threads, bool allow_smt);

// Pool options for these cpus under this budget (blocking waits under a quota).
ThreadPoolOptions pool_options(const CpuBudget& budget, const std::vector<int>& cpus);

}  // namespace ckjit
