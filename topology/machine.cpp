#include "topology/machine.h"

#include <cpuinfo.h>
#include <hwloc.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "runtime/json.h"

namespace ckjit::topo {
namespace {

std::vector<int> cpuset_ids(hwloc_const_bitmap_t set) {
  std::vector<int> ids;
  int id;
  hwloc_bitmap_foreach_begin(id, set) { ids.push_back(id); }
  hwloc_bitmap_foreach_end();
  return ids;
}

void probe_hwloc(Machine& m) {
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return;
  // Whole machine, not just our cpuset: we intersect with the allowed set ourselves.
  hwloc_topology_set_flags(topo, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  if (hwloc_topology_load(topo) != 0) {
    hwloc_topology_destroy(topo);
    return;
  }
  m.packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  m.numa_nodes = std::max(1, hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_NUMANODE));
  int ncores = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_CORE);
  for (int i = 0; i < ncores; ++i) {
    hwloc_obj_t core = hwloc_get_obj_by_type(topo, HWLOC_OBJ_CORE, i);
    m.cores.push_back({i, cpuset_ids(core->cpuset)});
  }
  const std::pair<hwloc_obj_type_t, int> levels[] = {
      {HWLOC_OBJ_L1CACHE, 1}, {HWLOC_OBJ_L2CACHE, 2}, {HWLOC_OBJ_L3CACHE, 3}};
  for (auto [type, level] : levels) {
    int n = hwloc_get_nbobjs_by_type(topo, type);
    for (int i = 0; i < n; ++i) {
      hwloc_obj_t c = hwloc_get_obj_by_type(topo, type, i);
      if (c->attr->cache.type == HWLOC_OBJ_CACHE_INSTRUCTION) continue;
      m.caches.push_back({level, std::size_t(c->attr->cache.size), int(c->attr->cache.linesize), cpuset_ids(c->cpuset)});
    }
  }
  hwloc_topology_destroy(topo);
}

std::string uarch_name(cpuinfo_uarch u, const std::string& vendor, int family, int model) {
  switch (u) {
    case cpuinfo_uarch_zen: return "zen";
    case cpuinfo_uarch_zen2: return "zen2";
    case cpuinfo_uarch_zen3: return "zen3";
    case cpuinfo_uarch_sky_lake: return "skylake";
    case cpuinfo_uarch_sunny_cove: return "sunnycove";
    case cpuinfo_uarch_cortex_a76: return "cortex-a76";
    case cpuinfo_uarch_neoverse_n1: return "neoverse-n1";
    case cpuinfo_uarch_neoverse_v1: return "neoverse-v1";
    case cpuinfo_uarch_neoverse_n2: return "neoverse-n2";
    default: break;
  }
  // Debian's libcpuinfo predates Zen 4/5 and recent Intel cores: decide from family/model.
  if (vendor == "AMD") {
    if (family == 0x1A) return "zen5";
    if (family == 0x19) {
      bool zen4 = (model >= 0x10 && model <= 0x1F) || (model >= 0x60 && model <= 0x7F) ||
                  (model >= 0xA0 && model <= 0xAF);
      return zen4 ? "zen4" : "zen3";
    }
  }
  if (vendor == "Intel" && family == 6) {
    if (model == 0x8F) return "sapphirerapids";
    if (model == 0xCF) return "emeraldrapids";
    if (model == 0xAD || model == 0xAE) return "graniterapids";
  }
  return "unknown";
}

void probe_cpuinfo(Machine& m) {
  std::ifstream f("/proc/cpuinfo");
  bool x86_cpuinfo = false;
  std::string line;
  while (std::getline(f, line)) {
    auto val = [&] { size_t c = line.find(':'); return c == std::string::npos ? std::string() : line.substr(c + 2); };
    if (line.rfind("vendor_id", 0) == 0) x86_cpuinfo = true;
    if (line.rfind("model name", 0) == 0 && m.model_name.empty()) m.model_name = val();
    else if (line.rfind("cpu family", 0) == 0 && !m.family) m.family = std::atoi(val().c_str());
    else if (line.rfind("model\t", 0) == 0 && !m.model) m.model = std::atoi(val().c_str());
    else if (line.rfind("stepping", 0) == 0 && !m.stepping) m.stepping = std::atoi(val().c_str());
    else if (line.empty() && !m.model_name.empty()) break;
  }
  cpuinfo_uarch uarch = cpuinfo_uarch_unknown;
  if (cpuinfo_initialize()) {
    if (const cpuinfo_processor* p = cpuinfo_get_processor(0)) {
      switch (p->core->vendor) {
        case cpuinfo_vendor_amd: m.vendor = "AMD"; break;
        case cpuinfo_vendor_intel: m.vendor = "Intel"; break;
        case cpuinfo_vendor_arm: m.vendor = "ARM"; break;
        case cpuinfo_vendor_nvidia: m.vendor = "NVIDIA"; break;
        case cpuinfo_vendor_huawei: m.vendor = "Huawei"; break;
        default: m.vendor = "other"; break;
      }
      uarch = p->core->uarch;
    }
    if (m.model_name.empty() && cpuinfo_get_packages_count() > 0) m.model_name = cpuinfo_get_package(0)->name;
  }
  m.uarch = uarch_name(uarch, m.vendor, m.family, m.model);
  // An AArch64 process reading an x86 kernel's /proc/cpuinfo (a "vendor_id" line) runs under
  // user-mode emulation (qemu-aarch64): the name says so, the ISA is the emulated CPU's (HWCAPs).
  if (cpu_isa().asimd && x86_cpuinfo) m.model_name = "AArch64 emulated on " + m.model_name, m.uarch = "emulated";
}

std::vector<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> ids;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return ids;
  for (int i = 0; i < CPU_SETSIZE; ++i)
    if (CPU_ISSET(i, &set)) ids.push_back(i);
  return ids;
}

std::string human_bytes(std::size_t b) {
  if (b >= (1u << 20) && b % (1u << 20) == 0) return std::to_string(b >> 20) + "M";
  if (b >= 1024) return std::to_string(b >> 10) + "K";
  return std::to_string(b) + "B";
}

}  // namespace

int Machine::logical_cpus() const {
  int n = 0;
  for (const auto& c : cores) n += int(c.cpus.size());
  return n;
}

std::size_t Machine::cache_bytes(int level) const {
  for (const auto& c : caches)
    if (c.level == level) return c.bytes;
  return 0;
}

int Machine::cache_sharers(int level) const {
  for (const auto& c : caches)
    if (c.level == level) return int(c.cpus.size());
  return 0;
}

std::string Machine::name() const {
  std::ostringstream s;
  s << (model_name.empty() ? "unknown CPU" : model_name) << " (" << uarch << ")";
  s << ", " << cores.size() << "C/" << logical_cpus() << "T";
  s << ", L1d " << human_bytes(cache_bytes(1)) << " L2 " << human_bytes(cache_bytes(2)) << " L3 "
    << human_bytes(cache_bytes(3));
  if (isa.asimd) {  // AArch64 (isa_detect_arm64.cpp sets it; x86 never does)
    s << ", " << (isa.sve ? "sve" + std::to_string(isa.sve_bits) : isa.asimddp ? std::string("asimd-dotprod") : std::string("asimd"))
      << (isa.sve && isa.asimddp ? "+dotprod" : "") << (isa.i8mm ? "+i8mm" : "") << (isa.sve2 ? "+sve2" : "") << (isa.arm_bf16 ? "+bf16" : "");
  } else {
    std::string isa_best = isa.amx_usable ? "amx-int8" : isa.avx512vnni ? "avx512-vnni" : isa.avx_vnni ? "avx-vnni"
                           : isa.avx2 ? "avx2" : "no-avx2";
    s << ", " << isa_best << (isa.avx512bf16 ? "+bf16" : "");
    s << ", AMX " << (isa.amx_usable ? "usable" : isa_detected.amx_tile ? "present-not-granted" : "absent");
  }
  s << ", budget " << usable_cpus << " thr";
  if (cgroup.quota) {
    char q[32];
    std::snprintf(q, sizeof q, "%.2f", cgroup.quota->cpus());
    s << " (quota " << q << " CPU)";
  } else {
    s << " (no quota)";
  }
  return s.str();
}

std::string Machine::to_json() const {
  OrderedJson j;
  j["name"] = name();
  j["vendor"] = vendor, j["model_name"] = model_name, j["uarch"] = uarch;
  j["family"] = family, j["model"] = model, j["stepping"] = stepping;
  j["packages"] = packages, j["numa_nodes"] = numa_nodes;
  j["physical_cores"] = int(cores.size()), j["logical_cpus"] = logical_cpus();
  OrderedJson& cj = j["cores"] = OrderedJson::array();
  for (const auto& c : cores) cj.push_back({{"index", c.index}, {"cpus", c.cpus}});
  OrderedJson& kj = j["caches"] = OrderedJson::array();
  for (const auto& c : caches) kj.push_back({{"level", c.level}, {"bytes", c.bytes}, {"line_bytes", c.line_bytes}, {"cpus", c.cpus}});
  auto isa_json = [](const Isa& i) {
    return OrderedJson{{"sse42", i.sse42}, {"avx", i.avx}, {"avx2", i.avx2}, {"fma", i.fma}, {"f16c", i.f16c},
                       {"avx512f", i.avx512f}, {"avx512bw", i.avx512bw}, {"avx512vl", i.avx512vl}, {"avx512dq", i.avx512dq},
                       {"avx512vnni", i.avx512vnni}, {"avx512bf16", i.avx512bf16}, {"avx_vnni", i.avx_vnni},
                       {"amx_tile", i.amx_tile}, {"amx_int8", i.amx_int8}, {"amx_bf16", i.amx_bf16}, {"amx_usable", i.amx_usable},
                       {"asimd", i.asimd}, {"asimddp", i.asimddp}, {"i8mm", i.i8mm}, {"sve", i.sve}, {"sve2", i.sve2},
                       {"arm_bf16", i.arm_bf16}, {"sve_bits", i.sve_bits}};
  };
  j["isa"] = isa_json(isa);
  j["isa_detected"] = isa_json(isa_detected);
  j["allowed_cpus"] = allowed_cpus;
  OrderedJson& g = j["cgroup"] = {{"source", cgroup.source}};
  g["quota"] = cgroup.quota ? OrderedJson{{"quota_us", cgroup.quota->quota_us}, {"period_us", cgroup.quota->period_us},
                                          {"cpus", cgroup.quota->cpus()}}
                            : OrderedJson(nullptr);
  g["notes"] = cgroup.notes;
  j["usable_cpus"] = usable_cpus, j["usable_cores"] = usable_cores;
  return dump_json(j);
}

const Machine& this_machine() {
  static const Machine m = detect_machine();
  return m;
}

Machine detect_machine() {
  Machine m;
  probe_cpuinfo(m);
  probe_hwloc(m);
  m.isa_detected = cpu_isa();
  m.isa = process_isa();
  m.cgroup = read_cgroup_limits();
  std::vector<int> allowed = affinity_cpus();
  if (m.cgroup.cpuset) {
    std::vector<int> both;
    std::set_intersection(allowed.begin(), allowed.end(), m.cgroup.cpuset->begin(), m.cgroup.cpuset->end(),
                          std::back_inserter(both));
    if (!both.empty()) allowed = both;
  }
  m.allowed_cpus = allowed;
  m.usable_cpus = usable_cpu_budget(int(allowed.size()), m.cgroup.quota);
  int cores_allowed = 0;
  for (const auto& c : m.cores)
    if (std::any_of(c.cpus.begin(), c.cpus.end(),
                    [&](int id) { return std::binary_search(allowed.begin(), allowed.end(), id); }))
      ++cores_allowed;
  m.usable_cores = std::max(1, std::min(cores_allowed ? cores_allowed : int(allowed.size()), m.usable_cpus));
  return m;
}

}  // namespace ckjit::topo
