// The decoder's Linear ops run the planner's plans: `ckjit run -v` names, per op shape, the plan
// and whether the tuned profile (written by `ckjit tune --model`) or the cost model chose it;
// --no-profile uses the cost model only. Blocking never changes the numbers.
#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "cli_run.h"
#include "synth_cache.h"
#include "tests/unit/slurp.h"

namespace fs = std::filesystem;

namespace {

using test_io::slurp;

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("ckjit run uses the tuned profile's plans when one matches / the cost model with --no-profile") {
  const fs::path dir = fs::temp_directory_path() / ("ckjit_plans_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir / "cache");
  const std::string env = "XDG_CACHE_HOME=" + q(dir / "cache");
  CliResult synth = synth_into("--preset tiny --seed 5", dir);
  REQUIRE_MESSAGE(synth.status == 0, synth.output);
  const fs::path model = dir / "tiny-Q4_K_M.gguf";

  // No profile yet: every plan comes from the cost model.
  const std::string args = "run -v -m " + q(model) + " -p 'The quick brown fox' -n 3 -b 8 -c 64 -t 2 --ignore-eos";
  CliResult none = run_ckjit(args + " --dump-logits " + q(dir / "none.f32"), env);
  INFO(none.output);
  REQUIRE(none.status == 0);
  CHECK(none.output.find("profile: none for this machine") != std::string::npos);
  CHECK(count(none.output, "[cost model]") >= 3);
  CHECK(count(none.output, "[profile]") == 0);

  // Tune the model's shapes at the run's prefill chunk (M = 8) into $XDG_CACHE_HOME/ckjit.
  CliResult tune = run_ckjit("tune --model " + q(model) + " --prefill-rows 8 --no-peaks --repeats 1 --candidates 2", env);
  INFO(tune.output);
  REQUIRE(tune.status == 0);

  CliResult prof = run_ckjit(args + " --dump-logits " + q(dir / "prof.f32"), env);
  INFO(prof.output);
  REQUIRE(prof.status == 0);
  CHECK(prof.output.find("profile: " + (dir / "cache").string()) != std::string::npos);
  // Prefill GEMMs, decode GEMVs and the fused Gate-Up (prefill; decode runs llama.cpp's unfused
  // order by default), each from the profile; the tied Q6_K LM head runs llama.cpp's vec_dot rows
  // (not repacked), so it has no plan.
  auto plan_line = [](const std::string& out, const std::string& prefix) {
    const size_t at = out.find("plan: " + prefix);
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  CHECK(plan_line(prof.output, "gemm:Q4_K:8x256x256:").find("[profile]") != std::string::npos);
  CHECK(plan_line(prof.output, "gemv:Q4_K:1x256x256:").find("[profile]") != std::string::npos);
  CHECK(plan_line(prof.output, "gate_up_swiglu:Q4_K:8x768x256:").find("[profile]") != std::string::npos);
  CHECK(plan_line(prof.output, "gemm:Q6_K:8x151936x256:").empty());
  CHECK(count(prof.output, "[profile]") >= 4);


  CliResult off = run_ckjit(args + " --no-profile --dump-logits " + q(dir / "off.f32"), env);
  INFO(off.output);
  REQUIRE(off.status == 0);
  CHECK(off.output.find("profile: not used (--no-profile)") != std::string::npos);
  CHECK(count(off.output, "[profile]") == 0);
  CHECK(count(off.output, "[cost model]") >= 4);
  CHECK(plan_line(off.output, "gemm:Q4_K:8x256x256:").find("[cost model]") != std::string::npos);

  // Same logits whichever plan cut the work.
  const std::string a = slurp(dir / "none.f32"), b = slurp(dir / "prof.f32"), c = slurp(dir / "off.f32");
  CHECK(a.size() == 3u * 151936u * 4u);
  CHECK(a == b);
  CHECK(a == c);
  if (!std::getenv("CKJIT_KEEP_TEST_FILES")) fs::remove_all(dir);
}

}  // TEST_SUITE
