#include "topology/cgroup.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "runtime/error.h"

namespace ckjit::topo {
namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Strict non-negative decimal parse: every character must be a digit, value must fit.
bool parse_long(const std::string& s, long max, long* out) {
  if (s.empty() || s.size() > 18) return false;
  long v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  if (v > max) return false;
  *out = v;
  return true;
}

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) return std::nullopt;
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

std::optional<CpuQuota> parse_cpu_max(const std::string& text) {
  std::istringstream in(trim(text));
  std::string q, p, extra;
  in >> q >> p >> extra;
  if (q.empty() || !extra.empty()) throw Error("cpu.max: expected '<quota|max> [period]', got '" + trim(text) + "'");
  long period = 100000;
  if (!p.empty() && (!parse_long(p, 1000000000L, &period) || period == 0))
    throw Error("cpu.max: bad period '" + p + "'");
  if (q == "max") return std::nullopt;
  long quota = 0;
  if (!parse_long(q, 1L << 40, &quota) || quota == 0) throw Error("cpu.max: bad quota '" + q + "'");
  return CpuQuota{quota, period};
}

std::vector<int> parse_cpu_list(const std::string& text) {
  std::vector<int> cpus;
  std::string t = trim(text);
  if (t.empty()) return cpus;
  std::stringstream ss(t);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = trim(item);
    long lo = 0, hi = 0;
    size_t dash = item.find('-');
    bool ok = dash == std::string::npos
                  ? parse_long(item, 65535, &lo) && (hi = lo, true)
                  : parse_long(item.substr(0, dash), 65535, &lo) && parse_long(item.substr(dash + 1), 65535, &hi);
    if (!ok || hi < lo) throw Error("cpu list: bad item '" + item + "' in '" + t + "'");
    for (long c = lo; c <= hi; ++c) cpus.push_back(int(c));
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

CgroupLimits read_cgroup_limits(const std::string& root, const std::string& proc_self_cgroup) {
  CgroupLimits out;
  out.source = "none";
  // /proc/self/cgroup: "0::/path" for v2; "N:cpu,cpuacct:/path" and "N:cpuset:/path" for v1.
  std::string v2_path, v1_cpu_path, v1_cpuset_path;
  bool have_v2 = false, have_v1_cpu = false, have_v1_cpuset = false;
  std::istringstream lines(proc_self_cgroup);
  std::string line;
  while (std::getline(lines, line)) {
    size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1), path = trim(line.substr(b + 1));
    if (line.substr(0, a) == "0" && ctrls.empty()) have_v2 = true, v2_path = path;
    std::stringstream cs(ctrls);
    std::string c;
    while (std::getline(cs, c, ',')) {
      if (c == "cpu") have_v1_cpu = true, v1_cpu_path = path;
      if (c == "cpuset") have_v1_cpuset = true, v1_cpuset_path = path;
    }
  }

  auto tighten = [&](const std::optional<CpuQuota>& q) {
    if (q && (!out.quota || q->cpus() < out.quota->cpus())) out.quota = q;
  };
  // Walk from the process's cgroup up to the root: any ancestor's limit applies too.
  auto ancestors = [](std::string p) {
    std::vector<std::string> v;
    if (p.empty() || p[0] != '/') p = "/" + p;
    for (;;) {
      v.push_back(p);
      if (p == "/") break;
      size_t s = p.find_last_of('/');
      p = s == 0 ? "/" : p.substr(0, s);
    }
    return v;
  };
  auto join = [&](const std::string& dir, const std::string& rel, const std::string& file) {
    return dir + (rel == "/" ? "" : rel) + "/" + file;
  };

  if (have_v2 && read_file(root + "/cgroup.controllers")) {
    out.source = "cgroup2:" + v2_path;
    for (const auto& p : ancestors(v2_path)) {
      std::string f = join(root, p, "cpu.max");
      if (auto t = read_file(f)) {
        try { tighten(parse_cpu_max(*t)); } catch (const Error& e) { out.notes.push_back(f + ": " + e.what()); }
      }
    }
    std::string f = join(root, v2_path, "cpuset.cpus.effective");
    if (auto t = read_file(f)) {
      try { out.cpuset = parse_cpu_list(*t); } catch (const Error& e) { out.notes.push_back(f + ": " + e.what()); }
    }
    return out;
  }
  if (have_v1_cpu || have_v1_cpuset) {
    out.source = "cgroup1:" + (have_v1_cpu ? v1_cpu_path : v1_cpuset_path);
    for (const std::string dir : {"/cpu,cpuacct", "/cpu"}) {
      if (!have_v1_cpu || !read_file(root + dir + "/cpu.cfs_period_us")) continue;
      // In a container the v1 hierarchy is often mounted at the cgroup itself: try both.
      for (const auto& p : ancestors(v1_cpu_path)) {
        std::string qf = join(root + dir, p, "cpu.cfs_quota_us"), pf = join(root + dir, p, "cpu.cfs_period_us");
        auto qt = read_file(qf), pt = read_file(pf);
        if (!qt || !pt) continue;
        std::string qs = trim(*qt);
        if (qs == "-1") continue;
        try { tighten(parse_cpu_max(qs + " " + trim(*pt))); } catch (const Error& e) { out.notes.push_back(qf + ": " + e.what()); }
      }
      break;
    }
    if (have_v1_cpuset) {
      for (const std::string& f : {join(root + "/cpuset", v1_cpuset_path, "cpuset.effective_cpus"),
                                   join(root + "/cpuset", "/", "cpuset.effective_cpus")}) {
        if (auto t = read_file(f)) {
          try { out.cpuset = parse_cpu_list(*t); } catch (const Error& e) { out.notes.push_back(f + ": " + e.what()); }
          break;
        }
      }
    }
  }
  return out;
}

CgroupLimits read_cgroup_limits() {
  // CKJIT_CGROUP_ROOT / CKJIT_PROC_SELF_CGROUP point at a fake cgroup tree: tests and "what would
  // ckjit do in that container" questions use them.
  const char* root = std::getenv("CKJIT_CGROUP_ROOT");
  const char* self_path = std::getenv("CKJIT_PROC_SELF_CGROUP");
  auto self = read_file(self_path ? self_path : "/proc/self/cgroup");
  if (!self) {
    CgroupLimits none;
    none.source = "none";
    none.notes.push_back("/proc/self/cgroup unreadable");
    return none;
  }
  return read_cgroup_limits(root ? root : "/sys/fs/cgroup", *self);
}

int usable_cpu_budget(int allowed_cpus, const std::optional<CpuQuota>& quota) {
  int budget = std::max(1, allowed_cpus);
  if (quota) budget = std::min(budget, std::max(1, int(std::floor(quota->cpus() + 1e-9))));
  return budget;
}

}  // namespace ckjit::topo
