#include "topology/memory.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/error.h"

namespace ckjit::topo {

namespace {
std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
// A cgroup file holding one number, or "max"; false when absent, "max" or garbled.
bool read_number(const std::string& path, uint64_t& out) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return false;
  try {
    size_t used = 0;
    out = std::stoull(s, &used);
    return used == s.size();
  } catch (...) {
    return false;
  }
}
}  // namespace

uint64_t parse_mem_available(const std::string& meminfo) {
  std::istringstream in(meminfo);
  std::string key, unit;
  uint64_t value = 0;
  while (in >> key >> value) {
    std::getline(in, unit);
    if (key == "MemAvailable:") return value * 1024;  // the kernel reports kB
  }
  return 0;
}

MemoryBudget memory_budget(const std::string& meminfo, const std::string& cgroup_root, const std::string& proc_self_cgroup) {
  MemoryBudget b;
  b.available = parse_mem_available(meminfo);
  if (b.available) b.source = "MemAvailable";
  // cgroup v2: the "0::/path" line; every level's limit counts.
  std::istringstream lines(proc_self_cgroup);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("0::", 0) != 0) continue;
    std::string path = line.substr(3);
    while (true) {
      const std::string dir = cgroup_root + (path == "/" ? "" : path);
      uint64_t max = 0, cur = 0;
      if (read_number(dir + "/memory.max", max)) {
        read_number(dir + "/memory.current", cur);
        const uint64_t room = max > cur ? max - cur : 0;
        if (!b.available || room < b.available) b.available = room, b.source = "cgroup2:" + path + " memory.max";
      }
      if (path == "/" || path.empty()) break;
      const size_t slash = path.rfind('/');
      path = slash == 0 ? "/" : path.substr(0, slash);
    }
  }
  return b;
}

bool parse_size(const std::string& text, uint64_t& bytes) {
  size_t used = 0;
  uint64_t v = 0;
  try {
    if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return false;
    v = std::stoull(text, &used);
  } catch (...) {
    return false;
  }
  int shift = 0;
  const std::string unit = text.substr(used);
  if (unit == "K" || unit == "k") shift = 10;
  else if (unit == "M" || unit == "m") shift = 20;
  else if (unit == "G" || unit == "g") shift = 30;
  else if (unit == "T" || unit == "t") shift = 40;
  else if (!unit.empty()) return false;
  if (shift && v > (UINT64_MAX >> shift)) return false;
  bytes = v << shift;
  return true;
}

MemoryBudget memory_budget() {
  if (const char* limit = std::getenv("CKJIT_MEMORY_LIMIT"); limit && *limit) {
    MemoryBudget b;
    if (!parse_size(limit, b.available) || b.available == 0)
      throw Error(std::string("CKJIT_MEMORY_LIMIT '") + limit + "' is not a size (bytes, or e.g. 512M, 8G)", ErrorKind::invalid_argument);
    b.source = std::string("CKJIT_MEMORY_LIMIT=") + limit;
    return b;
  }
  return memory_budget(slurp("/proc/meminfo"), "/sys/fs/cgroup", slurp("/proc/self/cgroup"));
}

void require_memory(double bytes, const std::string& what, const std::string& hint) {
  const MemoryBudget b = memory_budget();
  if (b.available == 0 || bytes <= double(b.available)) return;
  char msg[512];
  std::snprintf(msg, sizeof msg, "not enough memory for %s: %.0f MiB needed, %.0f MiB available (%s); %s (or pass $no_memory_check)",
                what.c_str(), bytes / 1048576.0, double(b.available) / 1048576.0, b.source.c_str(), hint.c_str());
  throw Error(msg, ErrorKind::out_of_memory);
}

}  // namespace ckjit::topo
