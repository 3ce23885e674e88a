#include "topology/cpu_budget.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace ckjit {

CpuBudget cpu_budget(const topo::Machine& m) {
  CpuBudget b;
  std::vector<int> allowed = m.allowed_cpus;
  std::sort(allowed.begin(), allowed.end());
  if (allowed.empty())  // affinity unknown: every cpu the topology knows
    for (const auto& c : m.cores) allowed.insert(allowed.end(), c.cpus.begin(), c.cpus.end());
  std::sort(allowed.begin(), allowed.end());
  allowed.erase(std::unique(allowed.begin(), allowed.end()), allowed.end());
  if (m.cgroup.cpuset) {
    std::vector<int> both;
    std::set_intersection(allowed.begin(), allowed.end(), m.cgroup.cpuset->begin(), m.cgroup.cpuset->end(),
                          std::back_inserter(both));
    if (both.empty()) {
      b.reasons.push_back("cgroup cpuset shares no cpu with the affinity mask; ignoring the cpuset");
    } else if (both.size() < allowed.size()) {
      b.reasons.push_back("cgroup cpuset limits us to " + std::to_string(both.size()) + " of " +
                          std::to_string(allowed.size()) + " cpus");
      allowed = both;
    }
  }
  if (allowed.empty()) allowed.push_back(0);
  b.cpus = allowed;

  auto usable = [&](int id) { return std::binary_search(allowed.begin(), allowed.end(), id); };
  for (const auto& core : m.cores) {
    std::vector<int> ids;
    for (int id : core.cpus)
      if (usable(id)) ids.push_back(id);
    if (!ids.empty()) b.cores.push_back(ids);
  }
  // No topology (hwloc failed): every allowed cpu counts as its own core.
  std::vector<int> covered;
  for (const auto& c : b.cores) covered.insert(covered.end(), c.begin(), c.end());
  std::sort(covered.begin(), covered.end());
  for (int id : allowed)
    if (!std::binary_search(covered.begin(), covered.end(), id)) b.cores.push_back({id});

  b.max_threads = int(allowed.size());
  if (m.cgroup.quota) {
    b.quota_enforced = true;
    int q = std::max(1, int(std::floor(m.cgroup.quota->cpus() + 1e-9)));
    if (q < b.max_threads) {
      char buf[96];
      std::snprintf(buf, sizeof buf, "cgroup quota %.2f CPU: at most %d active threads (floor, never round up)",
                    m.cgroup.quota->cpus(), q);
      b.reasons.push_back(buf);
      b.max_threads = q;
    }
  }
  if (m.usable_cpus > 0 && m.usable_cpus < b.max_threads) b.max_threads = m.usable_cpus;
  return b;
}

std::vector<int> choose_worker_cpus(const CpuBudget& budget, int threads, bool allow_smt) {
  int limit = std::min(threads, budget.max_threads);
  std::vector<int> cpus;
  for (const auto& core : budget.cores) {
    if (int(cpus.size()) >= limit) break;
    cpus.push_back(core.front());
  }
  for (std::size_t sib = 1; allow_smt && int(cpus.size()) < limit; ++sib) {
    bool any = false;
    for (const auto& core : budget.cores) {
      if (sib >= core.size() || int(cpus.size()) >= limit) continue;
      cpus.push_back(core[sib]);
      any = true;
    }
    if (!any) break;
  }
  return cpus;
}

ThreadPoolOptions pool_options(const CpuBudget& budget, const std::vector<int>& cpus) {
  ThreadPoolOptions o;
  o.cpus = cpus;
  o.max_threads = budget.max_threads;
  o.blocking_wait = budget.quota_enforced;
  o.spin_us = 300;  // decode issues ~200 short jobs per token: idle workers wait a little before sleeping
  return o;
}

}  // namespace ckjit
