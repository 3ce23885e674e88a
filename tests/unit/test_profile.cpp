// Tuning profiles and the JSON reader: round trip, corrupt/stale/foreign files ignored with a
// warning (never a throw), cache directory from XDG_CACHE_HOME / HOME.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "planner_test_machines.h"
#include "runtime/error.h"
#include "runtime/json.h"
#include "jit/planner/profile.h"

using namespace ckjit;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/ckjit-profile-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  REQUIRE(f.good());
  f << text;
}

// Sets an environment variable for one scope.
struct ScopedEnv {
  std::string name;
  std::optional<std::string> old;
  ScopedEnv(const std::string& n, const char* value) : name(n) {
    if (const char* o = std::getenv(n.c_str())) old = o;
    if (value) setenv(n.c_str(), value, 1);
    else unsetenv(n.c_str());
  }
  ~ScopedEnv() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

Profile sample_profile(const MachineIdentity& id) {
  Profile p;
  p.machine = id;
  p.created_utc = "2026-11-29T12:00:00Z";
  ProfileEntry a;
  a.shape = {OpKind::gate_up_swiglu, TensorType::Q4_K, 1028, 12288, 4096};
  a.runner = "reference \"quoted\" runner";
  a.best.tiling = Tiling{2, false, 8, 48, 64, 192, 256, LoopOrder::n_k_m, SplitAxis::n};
  a.best.median_us = 1234.5;
  a.best.model_us = 1000.25;
  a.best.runs_us = {1230.0, 1234.5, 1300.125};
  RejectedCandidate r;
  r.measured.tiling = Tiling{1, false, 4, 64, 32, 128, 512, LoopOrder::m_n_k, SplitAxis::m};
  r.measured.median_us = 2469;
  r.measured.model_us = 1900;
  r.measured.runs_us = {2469};
  r.ratio = 2.0;
  a.rejected.push_back(r);
  ProfileEntry b;
  b.shape = {OpKind::gemv, TensorType::Q6_K, 1, 151936, 4096};
  b.runner = "jit";
  b.best.tiling = Tiling{2, true, 1, 64, 1, 64, 256, LoopOrder::n_k_m, SplitAxis::n};
  b.best.median_us = 9000;
  p.entries = {a, b};
  MeasuredPeaks pk;
  pk.int8_gmacs_per_core = 512.5;
  pk.f32_gmacs_per_core = 128;
  pk.dram_gbps = 44.25;
  pk.dram_gbps_per_core = 20;
  pk.sync_us = 1.5;
  pk.how = "test";
  p.peaks = pk;
  return p;
}

}  // namespace

TEST_SUITE("profile") {

TEST_CASE("a saved profile loads back identical") {
  auto m = test::synthetic_machine(4, 2, 32 << 10, 1 << 20, 32 << 20);
  MachineIdentity id = MachineIdentity::of(m);
  Profile p = sample_profile(id);
  std::string dir = temp_dir();
  std::string path = dir + "/sub/dir/profile.json";  // directories are created
  save_profile(p, path);
  ProfileLoad l = load_profile(path, id);
  REQUIRE(l.profile);
  CHECK(l.warning.empty());
  const Profile& q = *l.profile;
  CHECK(q.machine == id);
  CHECK(q.created_utc == p.created_utc);
  REQUIRE(q.peaks);
  CHECK(q.peaks->int8_gmacs_per_core == 512.5);
  CHECK(q.peaks->bf16_gmacs_per_core == 0);
  CHECK(q.peaks->dram_gbps == 44.25);
  CHECK(q.peaks->sync_us == 1.5);
  CHECK(q.peaks->how == "test");
  REQUIRE(q.entries.size() == 2);
  for (std::size_t i = 0; i < 2; ++i) {
    const auto &x = p.entries[i], &y = q.entries[i];
    CHECK(x.shape == y.shape);
    CHECK(x.runner == y.runner);
    CHECK(x.best.tiling == y.best.tiling);
    CHECK(x.best.median_us == y.best.median_us);
    CHECK(x.best.model_us == y.best.model_us);
    CHECK(x.best.runs_us == y.best.runs_us);
    REQUIRE(x.rejected.size() == y.rejected.size());
    for (std::size_t r = 0; r < x.rejected.size(); ++r) {
      CHECK(x.rejected[r].measured.tiling == y.rejected[r].measured.tiling);
      CHECK(x.rejected[r].measured.median_us == y.rejected[r].measured.median_us);
      CHECK(x.rejected[r].ratio == y.rejected[r].ratio);
    }
  }
  CHECK(q.find(p.entries[0].shape) != nullptr);
  CHECK(q.find(p.entries[0].shape, "jit") == nullptr);
  CHECK(q.find(p.entries[1].shape, "jit") != nullptr);
  CHECK(q.find({OpKind::gemm, TensorType::Q4_K, 1, 2, 256}) == nullptr);
  CHECK(describe_profile_load(l).find("2 shapes") != std::string::npos);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("upsert replaces the entry of the same shape and runner") {
  Profile p = sample_profile(MachineIdentity{});
  ProfileEntry e = p.entries[0];
  e.best.median_us = 1;
  p.upsert(e);
  CHECK(p.entries.size() == 2);
  CHECK(p.entries[0].best.median_us == 1);
  e.runner = "another";
  p.upsert(e);
  CHECK(p.entries.size() == 3);
}

TEST_CASE("corrupt or stale or malformed profiles are ignored with a warning and never thrown") {
  auto m = test::synthetic_machine(4, 2, 32 << 10, 1 << 20, 32 << 20);
  MachineIdentity id = MachineIdentity::of(m);
  const std::string good = sample_profile(id).to_json();
  auto replace = [&](const std::string& from, const std::string& to) {
    std::string s = good;
    auto at = s.find(from);
    REQUIRE(at != std::string::npos);
    return s.replace(at, from.size(), to);
  };
  std::vector<std::pair<std::string, std::string>> bad = {
      {"empty", ""},
      {"garbage", "not json at all"},
      {"truncated", good.substr(0, good.size() / 2)},
      {"binary", std::string("\0\1\2\xff", 4)},
      {"not a profile", "{\"format\":\"something-else\",\"version\":1}"},
      {"stale version", replace("\"version\":2", "\"version\":1")},
      {"future version", replace("\"version\":2", "\"version\":3")},
      {"zero threads", replace("\"threads\":2", "\"threads\":0")},
      {"negative kc", replace("\"kc\":256", "\"kc\":-256")},
      {"fractional mr", replace("\"mr\":8", "\"mr\":8.5")},
      {"string as number", replace("\"median_us\":1234.5", "\"median_us\":\"fast\"")},
      {"negative time", replace("\"median_us\":1234.5", "\"median_us\":-1")},
      {"unknown order", replace("\"order\":\"N>K>M\"", "\"order\":\"sideways\"")},
      {"unknown op", replace("\"op\":\"gemv\"", "\"op\":\"conv\"")},
      {"bad shape", replace("\"k\":4096", "\"k\":4095")},
      {"edited machine", replace("\"model_name\":\"Synthetic\"", "\"model_name\":\"Edited\"")},
      {"duplicate key", replace("{\"format\"", "{\"version\":2,\"format\"")},
      {"deep nesting", std::string(100000, '[') + std::string(100000, ']')},
      {"trailing text", good + "x"},
      {"negative peak", replace("\"dram_gbps\":44.25", "\"dram_gbps\":-44")},
      {"peaks without a field", replace("\"sync_us\":1.5,", "")},
  };
  std::string dir = temp_dir();
  for (const auto& name_text_ : bad) {
    const auto& name = std::get<0>(name_text_);
    const auto& text = std::get<1>(name_text_);
    INFO(name);
    std::string path = dir + "/p.json";
    write_text(path, text);
    ProfileLoad l;
    CHECK_NOTHROW(l = load_profile(path, id));
    CHECK_FALSE(l.profile);
    CHECK(l.warning.find("corrupt or stale") != std::string::npos);
    CHECK(describe_profile_load(l).find("ignored") != std::string::npos);
  }
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("a profile from another machine is reported as foreign and ignored") {
  auto m = test::synthetic_machine(4, 2, 32 << 10, 1 << 20, 32 << 20);
  MachineIdentity here = MachineIdentity::of(m);
  auto other_m = m;
  other_m.model_name = "Other CPU";
  other_m.usable_cpus = 2;  // e.g. a different quota
  MachineIdentity other = MachineIdentity::of(other_m);
  CHECK(other.key() != here.key());
  std::string dir = temp_dir();
  save_profile(sample_profile(other), dir + "/p.json");
  ProfileLoad l = load_profile(dir + "/p.json", here);
  CHECK_FALSE(l.profile);
  CHECK(l.warning.find("another machine") != std::string::npos);
  CHECK(l.warning.find("Other CPU") != std::string::npos);
  CHECK(l.warning.find("usable_cpus") != std::string::npos);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("a missing profile is silent") {
  ProfileLoad l = load_profile("/nonexistent/ckjit/profile.json", MachineIdentity{});
  CHECK_FALSE(l.profile);
  CHECK(l.warning.empty());
  CHECK(describe_profile_load(l).find("none for this machine") != std::string::npos);
}

TEST_CASE("the profile lives in XDG_CACHE_HOME/ckjit or else ~/.cache/ckjit") {
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "/tmp/xdg-test");
    CHECK(profile_directory() == "/tmp/xdg-test/ckjit");
    MachineIdentity id;
    CHECK(profile_path(id) == "/tmp/xdg-test/ckjit/profile-" + id.key() + ".json");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", "relative/ignored");  // the XDG spec: only absolute paths count
    ScopedEnv home("HOME", "/home/someone");
    CHECK(profile_directory() == "/home/someone/.cache/ckjit");
  }
  {
    ScopedEnv xdg("XDG_CACHE_HOME", nullptr);
    ScopedEnv home("HOME", nullptr);
    CHECK_THROWS_AS(profile_directory(), Error);
  }
}

TEST_CASE("the machine key changes with every identity field") {
  auto m = test::synthetic_machine(4, 2, 32 << 10, 1 << 20, 32 << 20);
  std::string base = MachineIdentity::of(m).key();
  CHECK(base.size() == 16);
  auto with = [&](auto change) {
    auto copy = m;
    change(copy);
    return MachineIdentity::of(copy).key();
  };
  CHECK(with([](topo::Machine& x) { x.isa.avx512vnni = false; }) != base);
  CHECK(with([](topo::Machine& x) { x.caches[0].bytes = 48 << 10; }) != base);
  CHECK(with([](topo::Machine& x) { x.usable_cpus = 3; }) != base);
  CHECK(with([](topo::Machine& x) { x.stepping = 2; }) != base);
  CHECK(with([](topo::Machine&) {}) == base);
}

TEST_CASE("JSON reader: values and escapes and numbers") {
  JsonValue v = parse_json(R"( {"a": [1, -2.5e3, 0, true, false, null], "s": "q\"\\\/\n\u00e9\ud83d\ude00", "o": {}} )");
  const auto& a = v.at("a", "doc").as_array("a");
  REQUIRE(a.size() == 6);
  CHECK(a[0].as_int("a0") == 1);
  CHECK(a[1].as_number("a1") == -2500.0);
  CHECK(a[3].as_bool("a3"));
  CHECK(a[5].is_null());
  CHECK(v.at("s", "doc").as_string("s") == "q\"\\/\n\xc3\xa9\xf0\x9f\x98\x80");
  CHECK(v.at("o", "doc").as_object("o").empty());
  CHECK(!v.find("missing"));
  CHECK_THROWS_AS(v.at("missing", "doc"), Error);
  CHECK_THROWS_AS(v.at("s", "doc").as_number("s"), Error);
  CHECK(a[1].as_int("a1") == -2500);
  CHECK(parse_json("2.5").as_number("x") == 2.5);
  CHECK_THROWS_AS(parse_json("2.5").as_int("x"), Error);
}

TEST_CASE("JSON reader: malformed documents are errors with a position") {
  for (const char* bad : {"", "{", "[1,]", "{\"a\":1,}", "01", "1.", "-", "1e", "\"abc", "\"\\x\"",
                          "tru", "nul", "{\"a\" 1}", "{1:2}", "[1 2]", "\"a\nb\"", "1 2", "{\"a\":1,\"a\":2}",
                          "1e999"}) {
    INFO(bad);
    CHECK_THROWS_AS(parse_json(bad), Error);
  }
  CHECK_THROWS_AS(parse_json(std::string(65, '[') + std::string(65, ']')), Error);
  CHECK_NOTHROW(parse_json(std::string(64, '[') + std::string(64, ']')));
}

}  // TEST_SUITE
