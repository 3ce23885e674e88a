#pragma once
// Linux CPU limits: cgroup v2 cpu.max / cpuset.cpus.effective (v1 cfs_quota/cpuset as fallback).
// Parsers are pure functions over text so tests can feed fixture files; a missing or garbled
// file never fails the program, it only means "no limit known" plus a note.
#include <optional>
#include <string>
#include <vector>

namespace ckjit::topo {

struct CpuQuota {
  long quota_us = 0;   // run time allowed per period
  long period_us = 0;  // period length
  double cpus() const { return period_us > 0 ? double(quota_us) / double(period_us) : 0.0; }
};

// "max 100000" -> nullopt (unlimited); "150000 100000" -> {150000, 100000}; "150000" -> period 100000.
// Throws ckjit::Error on garbled text.
std::optional<CpuQuota> parse_cpu_max(const std::string& text);

// "0-3,8,10-11" -> {0,1,2,3,8,10,11}, sorted and unique. Empty text -> empty list.
// Throws ckjit::Error on garbled text (bad numbers, reversed ranges, ids >= 65536).
std::vector<int> parse_cpu_list(const std::string& text);

struct CgroupLimits {
  std::optional<CpuQuota> quota;            // the tightest quota on the path to the root
  std::optional<std::vector<int>> cpuset;   // effective cpuset, when readable
  std::string source;                       // "cgroup2:/path", "cgroup1:/path" or "none"
  std::vector<std::string> notes;           // unreadable or garbled files, for `ckjit info`
};

// Reads limits for the cgroup named in `proc_self_cgroup` (contents of /proc/self/cgroup) under
// the cgroup filesystem mounted at `cgroup_root` (normally /sys/fs/cgroup).
CgroupLimits read_cgroup_limits(const std::string& cgroup_root, const std::string& proc_self_cgroup);

// The live process's limits.
CgroupLimits read_cgroup_limits();

// Threads the process may keep busy: min(allowed logical CPUs, floor(quota)), at least 1.
// floor, not round: a thread beyond the quota makes the whole group stall at each period end.
int usable_cpu_budget(int allowed_cpus, const std::optional<CpuQuota>& quota);

}  // namespace ckjit::topo
