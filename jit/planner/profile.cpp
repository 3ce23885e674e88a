#include "jit/planner/profile.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <sstream>

#include "runtime/error.h"
#include "runtime/json.h"
#include "runtime/json.h"

namespace ckjit {

MachineIdentity MachineIdentity::of(const topo::Machine& m) {
  MachineIdentity id;
  id.vendor = m.vendor, id.model_name = m.model_name, id.uarch = m.uarch;
  id.family = m.family, id.model = m.model, id.stepping = m.stepping;
  id.isa = m.isa.to_string();
  id.physical_cores = int(m.cores.size());
  id.logical_cpus = m.logical_cpus();
  id.usable_cpus = m.usable_cpus;
  id.caches = "L1d " + std::to_string(m.cache_bytes(1)) + " L2 " + std::to_string(m.cache_bytes(2)) + " L3 " +
              std::to_string(m.cache_bytes(3));
  return id;
}

namespace {
std::vector<std::pair<std::string, std::string>> identity_fields(const MachineIdentity& i) {
  return {{"vendor", i.vendor},
          {"model_name", i.model_name},
          {"uarch", i.uarch},
          {"family", std::to_string(i.family)},
          {"model", std::to_string(i.model)},
          {"stepping", std::to_string(i.stepping)},
          {"isa", i.isa},
          {"physical_cores", std::to_string(i.physical_cores)},
          {"logical_cpus", std::to_string(i.logical_cpus)},
          {"usable_cpus", std::to_string(i.usable_cpus)},
          {"caches", i.caches}};
}
}  // namespace

std::string MachineIdentity::key() const {
  uint64_t h = 1469598103934665603ull;  // FNV-1a over "name=value\n" lines
  for (const auto& [k, v] : identity_fields(*this))
    for (unsigned char c : k + "=" + v + "\n") h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

std::vector<std::string> MachineIdentity::differences(const MachineIdentity& other) const {
  std::vector<std::string> out;
  auto a = identity_fields(*this), b = identity_fields(other);
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].second != b[i].second)
      out.push_back(a[i].first + " '" + a[i].second + "' vs '" + b[i].second + "'");
  return out;
}

const ProfileEntry* Profile::find(const OpShape& shape, const std::string& runner) const {
  for (const auto& e : entries)
    if (e.shape == shape && (runner.empty() || e.runner == runner)) return &e;
  return nullptr;
}

void Profile::upsert(ProfileEntry e) {
  for (auto& x : entries)
    if (x.shape == e.shape && x.runner == e.runner) {
      x = std::move(e);
      return;
    }
  entries.push_back(std::move(e));
}

namespace {

OrderedJson tiling_json(const Tiling& t) {
  return {{"threads", t.threads}, {"smt", t.smt}, {"mr", t.mr}, {"nr", t.nr}, {"mc", t.mc}, {"nc", t.nc}, {"kc", t.kc},
          {"order", loop_order_name(t.order)}, {"split", split_axis_name(t.split)}};
}

// The members of a measurement, added to j.
void write_measurement(OrderedJson& j, const Measurement& m) {
  j["tiling"] = tiling_json(m.tiling);
  j["median_us"] = m.median_us;
  j["model_us"] = m.model_us;
  j["runs_us"] = m.runs_us;
}

int64_t bounded_int(const JsonValue& v, const std::string& what, int64_t lo, int64_t hi) {
  int64_t x = v.as_int(what);
  if (x < lo || x > hi) throw Error(what + ": " + std::to_string(x) + " outside [" + std::to_string(lo) + ", " +
                                    std::to_string(hi) + "]");
  return x;
}

double time_us(const JsonValue& v, const std::string& what) {
  double d = v.as_number(what);
  if (!(d >= 0) || d > 1e12) throw Error(what + ": not a plausible time in microseconds");
  return d;
}

Tiling read_tiling(const JsonValue& v, const std::string& what) {
  Tiling t;
  t.threads = int(bounded_int(v.at("threads", what), what + ".threads", 1, 4096));
  t.smt = v.at("smt", what).as_bool(what + ".smt");
  t.mr = int(bounded_int(v.at("mr", what), what + ".mr", 1, 64));
  t.nr = int(bounded_int(v.at("nr", what), what + ".nr", 1, 1024));
  const int64_t big = int64_t(1) << 31;
  t.mc = bounded_int(v.at("mc", what), what + ".mc", 1, big);
  t.nc = bounded_int(v.at("nc", what), what + ".nc", 1, big);
  t.kc = bounded_int(v.at("kc", what), what + ".kc", 1, big);
  t.order = parse_loop_order(v.at("order", what).as_string(what + ".order"));
  t.split = parse_split_axis(v.at("split", what).as_string(what + ".split"));
  return t;
}

Measurement read_measurement(const JsonValue& v, const std::string& what) {
  Measurement m;
  m.tiling = read_tiling(v.at("tiling", what), what + ".tiling");
  m.median_us = time_us(v.at("median_us", what), what + ".median_us");
  m.model_us = time_us(v.at("model_us", what), what + ".model_us");
  const auto& runs = v.at("runs_us", what).as_array(what + ".runs_us");
  for (std::size_t i = 0; i < runs.size(); ++i)
    m.runs_us.push_back(time_us(runs[i], what + ".runs_us[" + std::to_string(i) + "]"));
  return m;
}

MachineIdentity read_identity(const JsonValue& v) {
  const std::string w = "machine";
  MachineIdentity i;
  i.vendor = v.at("vendor", w).as_string(w + ".vendor");
  i.model_name = v.at("model_name", w).as_string(w + ".model_name");
  i.uarch = v.at("uarch", w).as_string(w + ".uarch");
  i.family = int(bounded_int(v.at("family", w), w + ".family", 0, 1 << 20));
  i.model = int(bounded_int(v.at("model", w), w + ".model", 0, 1 << 20));
  i.stepping = int(bounded_int(v.at("stepping", w), w + ".stepping", 0, 1 << 20));
  i.isa = v.at("isa", w).as_string(w + ".isa");
  i.physical_cores = int(bounded_int(v.at("physical_cores", w), w + ".physical_cores", 0, 1 << 20));
  i.logical_cpus = int(bounded_int(v.at("logical_cpus", w), w + ".logical_cpus", 0, 1 << 20));
  i.usable_cpus = int(bounded_int(v.at("usable_cpus", w), w + ".usable_cpus", 0, 1 << 20));
  i.caches = v.at("caches", w).as_string(w + ".caches");
  return i;
}

std::string now_utc() {
  char buf[32];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

void make_dirs(const std::string& dir) {
  std::string cur;
  std::stringstream ss(dir);
  for (std::string part; std::getline(ss, part, '/');) {
    cur += part + "/";
    if (part.empty()) continue;
    if (mkdir(cur.c_str(), 0755) != 0 && errno != EEXIST)
      throw Error("cannot create directory '" + cur + "': " + std::strerror(errno));
  }
}

}  // namespace

std::string Profile::to_json() const {
  OrderedJson j;
  j["format"] = "ckjit-profile";
  j["version"] = kVersion;
  j["created_utc"] = created_utc;
  j["machine_key"] = machine.key();
  OrderedJson& mj = j["machine"] = OrderedJson::object();
  for (const auto& [k, v] : identity_fields(machine)) {
    const bool numeric = k == "family" || k == "model" || k == "stepping" || k == "physical_cores" ||
                         k == "logical_cpus" || k == "usable_cpus";
    if (numeric) mj[k] = std::atoll(v.c_str());
    else mj[k] = v;
  }
  if (peaks)
    j["peaks"] = {{"int8_gmacs_per_core", peaks->int8_gmacs_per_core}, {"bf16_gmacs_per_core", peaks->bf16_gmacs_per_core},
                  {"f32_gmacs_per_core", peaks->f32_gmacs_per_core}, {"dram_gbps", peaks->dram_gbps},
                  {"dram_gbps_per_core", peaks->dram_gbps_per_core}, {"sync_us", peaks->sync_us}, {"how", peaks->how}};
  OrderedJson& list = j["entries"] = OrderedJson::array();
  for (const auto& e : entries) {
    OrderedJson ej;
    ej["shape"] = e.shape.key();
    ej["op"] = op_kind_name(e.shape.kind);
    ej["wtype"] = tensor_type_info(e.shape.wtype).name;
    ej["m"] = e.shape.m, ej["n"] = e.shape.n, ej["k"] = e.shape.k;
    ej["runner"] = e.runner;
    write_measurement(ej["best"], e.best);
    OrderedJson& rej = ej["rejected"] = OrderedJson::array();
    for (const auto& r : e.rejected) {
      OrderedJson rj;
      write_measurement(rj, r.measured);
      rj["ratio"] = r.ratio;
      rej.push_back(std::move(rj));
    }
    list.push_back(std::move(ej));
  }
  return dump_json(j) + "\n";
}

Profile parse_profile(const std::string& text) {
  JsonValue doc = parse_json(text);
  const std::string w = "profile";
  if (doc.at("format", w).as_string(w + ".format") != "ckjit-profile") throw Error("not a ckjit profile");
  int64_t version = doc.at("version", w).as_int(w + ".version");
  if (version != Profile::kVersion)
    throw Error("stale profile format version " + std::to_string(version) + " (this build reads version " +
                std::to_string(Profile::kVersion) + ")");
  Profile p;
  p.created_utc = doc.at("created_utc", w).as_string(w + ".created_utc");
  p.machine = read_identity(doc.at("machine", w));
  if (doc.at("machine_key", w).as_string(w + ".machine_key") != p.machine.key())
    throw Error("machine_key does not match the machine fields (edited or corrupt file)");
  if (const auto pk = doc.find("peaks")) {
    const std::string wp = w + ".peaks";
    auto rate = [&](const char* name) {
      double d = pk->at(name, wp).as_number(wp + "." + name);
      if (!(d >= 0) || d > 1e9) throw Error(wp + "." + name + ": not a plausible rate");
      return d;
    };
    MeasuredPeaks mp;
    mp.int8_gmacs_per_core = rate("int8_gmacs_per_core");
    mp.bf16_gmacs_per_core = rate("bf16_gmacs_per_core");
    mp.f32_gmacs_per_core = rate("f32_gmacs_per_core");
    mp.dram_gbps = rate("dram_gbps");
    mp.dram_gbps_per_core = rate("dram_gbps_per_core");
    mp.sync_us = rate("sync_us");
    mp.how = pk->at("how", wp).as_string(wp + ".how");
    p.peaks = mp;
  }
  const auto& entries = doc.at("entries", w).as_array(w + ".entries");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const std::string we = w + ".entries[" + std::to_string(i) + "]";
    const JsonValue v = entries[i];
    ProfileEntry e;
    e.shape.kind = parse_op_kind(v.at("op", we).as_string(we + ".op"));
    e.shape.wtype = parse_tensor_type(v.at("wtype", we).as_string(we + ".wtype"));
    e.shape.m = v.at("m", we).as_int(we + ".m");
    e.shape.n = v.at("n", we).as_int(we + ".n");
    e.shape.k = v.at("k", we).as_int(we + ".k");
    validate(e.shape);
    e.runner = v.at("runner", we).as_string(we + ".runner");
    e.best = read_measurement(v.at("best", we), we + ".best");
    const auto& rej = v.at("rejected", we).as_array(we + ".rejected");
    for (std::size_t r = 0; r < rej.size(); ++r) {
      const std::string wr = we + ".rejected[" + std::to_string(r) + "]";
      RejectedCandidate c;
      c.measured = read_measurement(rej[r], wr);
      c.ratio = rej[r].at("ratio", wr).as_number(wr + ".ratio");
      if (!(c.ratio > 0) || c.ratio > 1e9) throw Error(wr + ".ratio: not a plausible ratio");
      e.rejected.push_back(std::move(c));
    }
    p.entries.push_back(std::move(e));
  }
  return p;
}

std::string profile_directory() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return std::string(xdg) + "/ckjit";
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return std::string(home) + "/.cache/ckjit";
  throw Error("no cache directory: neither XDG_CACHE_HOME nor HOME is an absolute path");
}

std::string profile_path(const MachineIdentity& id) { return profile_directory() + "/profile-" + id.key() + ".json"; }

void save_profile(const Profile& p, const std::string& path) {
  Profile copy = p;
  if (copy.created_utc.empty()) copy.created_utc = now_utc();
  std::size_t slash = path.find_last_of('/');
  if (slash != std::string::npos && slash > 0) make_dirs(path.substr(0, slash));
  std::string tmp = path + ".tmp." + std::to_string(getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw Error("cannot write profile '" + tmp + "': " + std::strerror(errno));
    f << copy.to_json();
    f.flush();
    if (!f) throw Error("cannot write profile '" + tmp + "'");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error("cannot move profile into place at '" + path + "': " + why);
  }
}

ProfileLoad load_profile(const std::string& path, const MachineIdentity& expected) {
  ProfileLoad out;
  out.path = path;
  std::ifstream f(path, std::ios::binary);
  if (!f) return out;  // absent: nothing to say
  try {
    std::stringstream ss;
    ss << f.rdbuf();
    std::string text = ss.str();
    if (text.size() > (64u << 20)) throw Error("file larger than 64 MiB");
    Profile p = parse_profile(text);
    auto diff = p.machine.differences(expected);
    if (!diff.empty()) {
      std::string d;
      for (const auto& x : diff) d += (d.empty() ? "" : "; ") + x;
      out.warning = "profile is for another machine (" + d + ")";
      return out;
    }
    out.profile = std::move(p);
  } catch (const std::exception& e) {  // ckjit::Error and allocation failures alike: ignore the file
    out.warning = std::string("corrupt or stale profile: ") + e.what();
  }
  return out;
}

ProfileLoad load_profile_for(const topo::Machine& m) {
  MachineIdentity id = MachineIdentity::of(m);
  std::string path;
  try {
    path = profile_path(id);
  } catch (const std::exception& e) {
    ProfileLoad out;
    out.warning = e.what();
    return out;
  }
  return load_profile(path, id);
}

std::string describe_profile_load(const ProfileLoad& l) {
  if (l.profile)
    return "profile: " + l.path + " (" + std::to_string(l.profile->entries.size()) + " shape" +
           (l.profile->entries.size() == 1 ? "" : "s") + ")";
  if (!l.warning.empty()) return "profile: ignored " + (l.path.empty() ? std::string("(no path)") : l.path) + ": " + l.warning;
  return "profile: none for this machine (" + l.path + "); the cost model decides";
}

}  // namespace ckjit
