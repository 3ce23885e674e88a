#pragma once
// Synthetic machines for planner/pool tests: deterministic topology, caches and limits, so the
// tests do not depend on the machine they run on.
#include <string>
#include <vector>

#include "topology/machine.h"

namespace ckjit::test {

// `cores` physical cores with `smt` threads each (cpu ids core + i*cores, Linux-style), one L3.
inline topo::Machine synthetic_machine(int cores, int smt, std::size_t l1, std::size_t l2, std::size_t l3,
                                       bool avx512 = true) {
  topo::Machine m;
  m.vendor = "AMD", m.model_name = "Synthetic", m.uarch = "zen4", m.family = 25, m.model = 17;
  m.packages = 1, m.numa_nodes = 1;
  std::vector<int> all;
  for (int c = 0; c < cores; ++c) {
    topo::Core core;
    core.index = c;
    for (int t = 0; t < smt; ++t) core.cpus.push_back(c + t * cores);
    m.cores.push_back(core);
    m.caches.push_back({1, l1, 64, core.cpus});
    m.caches.push_back({2, l2, 64, core.cpus});
  }
  for (int i = 0; i < cores * smt; ++i) all.push_back(i);
  m.caches.push_back({3, l3, 64, all});
  m.allowed_cpus = all;
  m.cgroup.source = "none";
  m.isa.sse42 = m.isa.avx = m.isa.avx2 = m.isa.fma = m.isa.f16c = true;
  if (avx512) m.isa.avx512f = m.isa.avx512bw = m.isa.avx512vl = m.isa.avx512dq = m.isa.avx512vnni = m.isa.avx512bf16 = true;
  m.isa_detected = m.isa;
  m.usable_cpus = cores * smt;
  m.usable_cores = cores;
  return m;
}

}  // namespace ckjit::test
