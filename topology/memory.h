#pragma once
// Memory this process may still take before the kernel (or its cgroup) refuses or kills it:
// MemAvailable from /proc/meminfo, capped by every cgroup v2 memory.max - memory.current on the
// process's path. Checked before large allocations (the KV cache, the activations) so that a
// too-large -c fails with a message instead of an OOM kill.
#include <cstdint>
#include <string>

namespace ckjit::topo {

struct MemoryBudget {
  uint64_t available = 0;  // bytes; 0: unknown (no check possible)
  std::string source;      // "MemAvailable", "cgroup2:/path memory.max", ...
};

// MemAvailable in bytes from /proc/meminfo text (0 when absent or garbled).
uint64_t parse_mem_available(const std::string& meminfo);
// The tightest of MemAvailable and the cgroup v2 limits on the path in proc_self_cgroup.
MemoryBudget memory_budget(const std::string& meminfo, const std::string& cgroup_root, const std::string& proc_self_cgroup);
// Of the live process; CKJIT_MEMORY_LIMIT (bytes, or with a K, M, G or T suffix) replaces it
// (tests, or a budget tighter than the machine's). A value that is no size: Error invalid_argument.
MemoryBudget memory_budget();
// "8G", "512M", "1048576" in bytes; false for anything else.
bool parse_size(const std::string& text, uint64_t& bytes);

// Error "not enough memory for WHAT: NEED MiB ... available (SOURCE); HINT (or pass
// --no-memory-check)" when bytes exceed the live budget; nothing when it fits or is unknown.
void require_memory(double bytes, const std::string& what, const std::string& hint);

}  // namespace ckjit::topo
