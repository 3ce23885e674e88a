#pragma once
// One value that describes the machine: what cores and caches exist (hwloc), what the CPU is and
// can execute (cpuinfo + CPUID), and how much of it this process may use (affinity, cgroup).
// Every report carries Machine::name().
#include <cstddef>
#include <string>
#include <vector>

#include "topology/cgroup.h"
#include "topology/isa.h"

namespace ckjit::topo {

struct Core {
  int index = 0;           // logical index of the physical core
  std::vector<int> cpus;   // OS cpu ids of its hardware threads (SMT siblings)
};

struct Cache {
  int level = 0;               // 1, 2, 3
  std::size_t bytes = 0;
  int line_bytes = 0;
  std::vector<int> cpus;       // OS cpu ids that share this cache instance
};

struct Machine {
  std::string vendor;          // "AMD", "Intel", ...
  std::string model_name;      // "AMD EPYC 9R45 ..."
  std::string uarch;           // "zen4", "sapphire-rapids", ... ("unknown" if unrecognised)
  int family = 0, model = 0, stepping = 0;
  int packages = 0;
  int numa_nodes = 0;
  std::vector<Core> cores;     // all physical cores of the machine
  std::vector<Cache> caches;   // data/unified cache instances, L1d..L3
  std::vector<int> allowed_cpus;  // sched affinity ∩ cgroup cpuset
  CgroupLimits cgroup;
  Isa isa;                     // after CKJIT_MAX_ISA capping
  Isa isa_detected;            // before capping
  int usable_cpus = 1;         // usable_cpu_budget(allowed_cpus, quota)
  int usable_cores = 1;        // physical cores with an allowed cpu, capped by usable_cpus

  int logical_cpus() const;
  std::size_t cache_bytes(int level) const;   // size of one instance (0 if absent)
  int cache_sharers(int level) const;         // cpus sharing one instance

  std::string name() const;     // one line, printed by every report
  std::string to_json() const;  // the whole value
};

// Probes the live machine. Never throws for missing information: fields stay empty/zero.
Machine detect_machine();
// detect_machine() once per process (the load path's machine; `ckjit info` probes afresh).
const Machine& this_machine();

}  // namespace ckjit::topo
