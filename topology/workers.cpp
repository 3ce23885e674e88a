#include "topology/workers.h"

#include "topology/cpu_budget.h"

#include <algorithm>

namespace ckjit {

Workers::Workers(int threads, std::vector<int> cpus, int spin_us) {
  ThreadPoolOptions o;
  o.threads = std::max(1, threads);
  o.cpus = std::move(cpus);
  o.pin_caller = !o.cpus.empty();
  o.spin_us = spin_us;
  pool_ = std::make_unique<ThreadPool>(o);
}

Workers::Workers(const ThreadPoolOptions& options) : pool_(std::make_unique<ThreadPool>(options)) {}

std::unique_ptr<Workers> Workers::for_budget(const topo::Machine& machine, int threads) {
  const CpuBudget budget = cpu_budget(machine);
  return std::make_unique<Workers>(pool_options(budget, choose_worker_cpus(budget, threads, false)));
}

Range split_range(int64_t count, int64_t parts, int64_t i, int64_t align) {
  const int64_t units = (count + align - 1) / align;
  const int64_t b = units * i / parts, e = units * (i + 1) / parts;
  return {std::min(count, b * align), std::min(count, e * align)};
}

}  // namespace ckjit
