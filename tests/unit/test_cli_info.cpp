// `ckjit info` end to end, including a simulated container quota.
#include <doctest/doctest.h>

#include "tests/unit/cli_run.h"

TEST_SUITE("topology") {

TEST_CASE("ckjit info names the machine") {
  auto r = run_ckjit("info");
  CHECK(r.status == 0);
  CHECK(r.output.find("budget") != std::string::npos);
  auto j = run_ckjit("info --json");
  CHECK(j.status == 0);
  CHECK(j.output.find("\"isa\"") != std::string::npos);
  CHECK(j.output.find("\"usable_cpus\"") != std::string::npos);
}

TEST_CASE("ckjit info honours a cgroup v2 quota of 1.5 CPUs") {
  std::string fx = CKJIT_FIXTURES_DIR "/cgroup";
  auto r = run_ckjit("info", "CKJIT_CGROUP_ROOT='" + fx + "/v2_quota' CKJIT_PROC_SELF_CGROUP='" + fx + "/v2_quota.self'");
  CHECK(r.status == 0);
  CHECK(r.output.find("budget 1 thr (quota 1.50 CPU)") != std::string::npos);
}

TEST_CASE("ckjit rejects unknown commands and options") {
  CHECK(run_ckjit("frobnicate").status != 0);
  CHECK(run_ckjit("info --frobnicate").status != 0);
  CHECK(run_ckjit("info --help").status == 0);
}

}  // TEST_SUITE
