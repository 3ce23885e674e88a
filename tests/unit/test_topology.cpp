// Topology: cgroup parsing from fixture trees, the CPU budget rule, ISA cross-checked with /proc.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "runtime/error.h"
#include "tests/unit/skip.h"
#include "topology/cgroup.h"
#include "topology/machine.h"
#include "topology/memory.h"

using namespace ckjit::topo;

static const std::string kCgroups = std::string(CKJIT_FIXTURES_DIR) + "/cgroup";

TEST_SUITE("topology") {

TEST_CASE("cpu.max parsing") {
  CHECK_FALSE(parse_cpu_max("max 100000\n").has_value());
  CHECK_FALSE(parse_cpu_max("max").has_value());
  auto q = parse_cpu_max("150000 100000\n");
  REQUIRE(q);
  CHECK(q->quota_us == 150000);
  CHECK(q->period_us == 100000);
  CHECK(q->cpus() == doctest::Approx(1.5));
  auto q2 = parse_cpu_max("50000");  // period defaults to 100 ms
  REQUIRE(q2);
  CHECK(q2->cpus() == doctest::Approx(0.5));
  for (const char* bad : {"", "banana", "100000 0", "-5 100000", "1.5 100000", "100 200 300", "max x", "0 100000"})
    CHECK_THROWS_AS(parse_cpu_max(bad), ckjit::Error);
}

TEST_CASE("memory budget: MemAvailable and every cgroup v2 memory.max on the path") {
  CHECK(ckjit::topo::parse_mem_available("MemTotal: 100 kB\nMemAvailable:    2048 kB\n") == 2048u * 1024);
  CHECK(ckjit::topo::parse_mem_available("garbage") == 0);
  const std::string root = (std::filesystem::temp_directory_path() / ("ckjit_cg_" + std::to_string(::getpid()))).string();
  std::filesystem::create_directories(root + "/a/b");
  std::ofstream(root + "/a/memory.max") << "1048576\n";
  std::ofstream(root + "/a/memory.current") << "524288\n";
  std::ofstream(root + "/a/b/memory.max") << "max\n";
  const auto b = ckjit::topo::memory_budget("MemAvailable: 4096 kB\n", root, "0::/a/b\n");
  CHECK(b.available == 524288u);  // the parent's limit minus its usage, below MemAvailable
  CHECK(b.source == "cgroup2:/a memory.max");
  const auto none = ckjit::topo::memory_budget("MemAvailable: 4096 kB\n", root, "0::/elsewhere\n");
  CHECK(none.available == 4096u * 1024);
  CHECK(none.source == "MemAvailable");
  std::filesystem::remove_all(root);
}

TEST_CASE("memory budget: sizes parse and CKJIT_MEMORY_LIMIT replaces the machine's budget and a bad one is an error") {
  uint64_t v = 0;
  CHECK((parse_size("1048576", v) && v == 1048576u));
  CHECK((parse_size("512M", v) && v == 512ull << 20));
  CHECK((parse_size("8G", v) && v == 8ull << 30));
  CHECK((parse_size("3k", v) && v == 3072u));
  for (const char* bad : {"", "M", "-1G", "1.5G", "8GB", "12 M", "99999999999999999999", "17179869184T"}) CHECK_FALSE(parse_size(bad, v));
  const char* before = std::getenv("CKJIT_MEMORY_LIMIT");
  const std::string saved = before ? before : "";
  ::setenv("CKJIT_MEMORY_LIMIT", "64M", 1);
  const MemoryBudget b = memory_budget();
  CHECK(b.available == 64ull << 20);
  CHECK(b.source == "CKJIT_MEMORY_LIMIT=64M");
  CHECK_THROWS_WITH_AS(require_memory(65.0 * 1048576, "the test's plan", "lower it"), doctest::Contains("65 MiB needed, 64 MiB available"),
                       ckjit::Error);
  CHECK_NOTHROW(require_memory(63.0 * 1048576, "the test's plan", "lower it"));
  ::setenv("CKJIT_MEMORY_LIMIT", "lots", 1);
  CHECK_THROWS_WITH_AS(memory_budget(), doctest::Contains("CKJIT_MEMORY_LIMIT 'lots' is not a size"), ckjit::Error);
  if (before) ::setenv("CKJIT_MEMORY_LIMIT", saved.c_str(), 1);
  else ::unsetenv("CKJIT_MEMORY_LIMIT");
}

TEST_CASE("cpu list parsing") {
  CHECK(parse_cpu_list("0-3,8,10-11\n") == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(parse_cpu_list("5") == std::vector<int>{5});
  CHECK(parse_cpu_list("3,1,1-2") == std::vector<int>{1, 2, 3});
  CHECK(parse_cpu_list("").empty());
  CHECK(parse_cpu_list("\n").empty());
  for (const char* bad : {"0-x", "3-1", "a", "1,,2", "-1", "0-99999", "1-", "1 2"})
    CHECK_THROWS_AS(parse_cpu_list(bad), ckjit::Error);
}

TEST_CASE("budget: min(allowed cpus / floor(quota)) / at least 1") {
  CHECK(usable_cpu_budget(2, std::nullopt) == 2);
  CHECK(usable_cpu_budget(8, CpuQuota{150000, 100000}) == 1);  // 1.5 CPUs -> 1 thread
  CHECK(usable_cpu_budget(8, CpuQuota{200000, 100000}) == 2);
  CHECK(usable_cpu_budget(8, CpuQuota{250000, 100000}) == 2);
  CHECK(usable_cpu_budget(2, CpuQuota{400000, 100000}) == 2);  // quota above the cores: cores win
  CHECK(usable_cpu_budget(8, CpuQuota{50000, 100000}) == 1);   // half a CPU still runs one thread
  CHECK(usable_cpu_budget(0, std::nullopt) == 1);
}

TEST_CASE("cgroup v2: quota and cpuset of the process's cgroup") {
  auto l = read_cgroup_limits(kCgroups + "/v2_quota", "0::/app\n");
  CHECK(l.source == "cgroup2:/app");
  REQUIRE(l.quota);
  CHECK(l.quota->cpus() == doctest::Approx(1.5));
  REQUIRE(l.cpuset);
  CHECK(*l.cpuset == std::vector<int>{0, 1, 2, 3, 8, 10, 11});
  CHECK(l.notes.empty());
}

TEST_CASE("cgroup v2: an ancestor's quota applies") {
  auto l = read_cgroup_limits(kCgroups + "/v2_nested", "0::/a/b\n");
  REQUIRE(l.quota);
  CHECK(l.quota->cpus() == doctest::Approx(3.0));
  REQUIRE(l.cpuset);
  CHECK(l.cpuset->size() == 8);
}

TEST_CASE("cgroup v2: garbled files are notes / not failures") {
  auto l = read_cgroup_limits(kCgroups + "/v2_garbled", "0::/x\n");
  CHECK_FALSE(l.quota);
  CHECK_FALSE(l.cpuset);
  CHECK(l.notes.size() == 2);
}

TEST_CASE("cgroup v2: missing files mean no limit") {
  auto l = read_cgroup_limits(kCgroups + "/v2_missing", "0::/gone\n");
  CHECK_FALSE(l.quota);
  CHECK_FALSE(l.cpuset);
  CHECK(l.notes.empty());
}

TEST_CASE("cgroup v1: cfs quota and cpuset") {
  auto l = read_cgroup_limits(kCgroups + "/v1", "4:cpu,cpuacct:/docker/abc\n3:cpuset:/docker/abc\n");
  CHECK(l.source == "cgroup1:/docker/abc");
  REQUIRE(l.quota);
  CHECK(l.quota->cpus() == doctest::Approx(0.5));
  REQUIRE(l.cpuset);
  CHECK(*l.cpuset == std::vector<int>{0, 1});
}

TEST_CASE("no cgroup information at all") {
  auto l = read_cgroup_limits(kCgroups + "/does-not-exist", "");
  CHECK(l.source == "none");
  CHECK_FALSE(l.quota);
}

TEST_CASE("ISA flags agree with /proc/cpuinfo") {
  std::ifstream f("/proc/cpuinfo");
  std::stringstream ss;
  ss << f.rdbuf();
  Isa isa = detect_isa();
  // Under user-mode emulation (qemu-aarch64 on x86) /proc/cpuinfo is the host's: nothing to compare.
  if (isa.asimd && ss.str().find("vendor_id") != std::string::npos) CKJIT_SKIP("an AArch64 process reading an x86 host's /proc/cpuinfo (emulated)");
  auto proc = parse_proc_cpuinfo_flags(ss.str());
  REQUIRE(proc.found);
  CHECK(isa.asimd == proc.isa.asimd);
  CHECK(isa.asimddp == proc.isa.asimddp);
  CHECK(isa.i8mm == proc.isa.i8mm);
  CHECK(isa.sve == proc.isa.sve);
  CHECK(isa.sve2 == proc.isa.sve2);
  CHECK(isa.avx2 == proc.isa.avx2);
  CHECK(isa.fma == proc.isa.fma);
  CHECK(isa.f16c == proc.isa.f16c);
  CHECK(isa.avx512f == proc.isa.avx512f);
  CHECK(isa.avx512bw == proc.isa.avx512bw);
  CHECK(isa.avx512vl == proc.isa.avx512vl);
  CHECK(isa.avx512vnni == proc.isa.avx512vnni);
  CHECK(isa.avx512bf16 == proc.isa.avx512bf16);
  CHECK(isa.avx_vnni == proc.isa.avx_vnni);
  CHECK(isa.amx_tile == proc.isa.amx_tile);
  CHECK(isa.amx_int8 == proc.isa.amx_int8);
  // AMX may be present but not granted; never usable without being present.
  CHECK((!isa.amx_usable || isa.amx_tile));
}

TEST_CASE("AArch64 features from /proc/cpuinfo's Features line / and the neon / dotprod / sve caps") {
  const auto p = parse_proc_cpuinfo_flags("processor\t: 0\nFeatures\t: fp asimd evtstrm aes crc32 atomics asimddp sve i8mm bf16 sve2\nCPU part\t: 0xd40\n");
  REQUIRE(p.found);
  CHECK(p.isa.asimd);
  CHECK(p.isa.asimddp);
  CHECK(p.isa.i8mm);
  CHECK(p.isa.sve);
  CHECK(p.isa.sve2);
  CHECK(p.isa.arm_bf16);
  CHECK_FALSE(p.isa.avx2);
  Isa all = p.isa;
  all.sve_bits = 256;
  CHECK(all.to_string() == "asimd asimddp i8mm sve sve2 bf16 sve-vl=256");
  const Isa neon = cap_isa(all, "neon");
  CHECK(neon.asimd);
  CHECK_FALSE((neon.asimddp || neon.i8mm || neon.sve || neon.sve2 || neon.arm_bf16 || neon.sve_bits));
  const Isa dot = cap_isa(all, "dotprod");
  CHECK((dot.asimddp && dot.i8mm));
  CHECK_FALSE((dot.sve || dot.sve2 || dot.sve_bits));
  CHECK(cap_isa(all, "sve").to_string() == all.to_string());
  CHECK(cap_isa(all, "avx2").to_string() == all.to_string());  // the other architecture's caps cap nothing here
}

TEST_CASE("CKJIT_MAX_ISA caps") {
  Isa all;
  all.avx2 = all.avx512f = all.avx512vnni = all.avx512bw = all.avx512vl = true;
  all.amx_tile = all.amx_int8 = all.amx_usable = true;
  all.avx_vnni = true;
  Isa a = cap_isa(all, "avx2");
  CHECK(a.avx2);
  CHECK_FALSE(a.avx_vnni);
  CHECK_FALSE(a.avx512f);
  CHECK_FALSE(a.avx512vnni);
  CHECK_FALSE(a.amx_usable);
  Isa v = cap_isa(all, "avxvnni");
  CHECK(v.avx_vnni);
  CHECK_FALSE(v.avx512vnni);
  CHECK_FALSE(v.avx512vl);
  CHECK_FALSE(v.amx_usable);
  Isa b = cap_isa(all, "avx512");
  CHECK(b.avx512vnni);
  CHECK(b.avx_vnni);
  CHECK_FALSE(b.amx_usable);
  CHECK(cap_isa(all, "").amx_usable);
  CHECK_THROWS_AS(cap_isa(all, "sse9"), ckjit::Error);
}

TEST_CASE("machine: cores / caches and budget are consistent") {
  Machine m = detect_machine();
  CHECK(m.cores.size() >= 1);
  CHECK(m.logical_cpus() >= int(m.cores.size()));
  CHECK(m.cache_bytes(1) > 0);
  CHECK(m.cache_bytes(2) >= m.cache_bytes(1));
  CHECK(m.usable_cpus >= 1);
  CHECK(m.usable_cpus <= int(m.allowed_cpus.size()));
  CHECK(m.usable_cores <= m.usable_cpus);
  CHECK(m.name().find("budget") != std::string::npos);
  CHECK(m.to_json().front() == '{');
}

}  // TEST_SUITE
