// Tuner and reference runner: the blocked reference honours any tiling and equals the plain loop
// exactly; tune() measures every candidate and records the rejected ones; `ckjit tune` on tiny
// shapes completes and writes a profile that `ckjit plan` then uses.
#include <doctest/doctest.h>

#include <cmath>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "jit/planner/peak_probe.h"
#include "jit/planner/reference_runner.h"
#include "jit/planner/task_grid.h"
#include "jit/planner/tuner.h"
#include "runtime/error.h"
#include "runtime/json.h"
#include "jit/planner/profile.h"
#include "topology/machine.h"

using namespace ckjit;
using namespace ckjit::planner;

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/ckjit-tune-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  return tmpl;
}

struct CommandResult {
  int status = -1;
  std::string out;
};

// Runs the ckjit binary with a shell command line; stdout and stderr together.
CommandResult run_ckjit(const std::string& env, const std::string& args) {
  std::string cmd = env + " '" + std::string(CKJIT_BINARY_PATH) + "' " + args + " 2>&1";
  CommandResult r;
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  char buf[4096];
  std::size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A runner that counts runs and fails shapes above a size, to test the engine alone.
class CountingRunner : public OpRunner {
 public:
  int runs = 0, prepared = 0;
  std::string name() const override { return "counting"; }
  std::string cannot_run(const OpShape& s) const override { return s.n > 1000 ? "too wide for this test" : ""; }
  void prepare(const OpShape&) override { ++prepared; }
  void run(const Plan& p, ThreadPool& pool) override {
    REQUIRE(pool.size() == p.tiling.threads);
    ++runs;
  }
};

}  // namespace

TEST_SUITE("tuner") {

TEST_CASE("the blocked reference equals the plain loop for every tiling (exactly)") {
  const std::vector<OpShape> shapes = {
      {OpKind::gemm, TensorType::Q4_K, 7, 33, 512},       {OpKind::gate_up_swiglu, TensorType::Q8_0, 5, 19, 96},
      {OpKind::gemv, TensorType::Q6_K, 1, 70, 256},       {OpKind::gemm, TensorType::F32, 13, 17, 40},
      {OpKind::gate_up_swiglu, TensorType::BF16, 3, 9, 24},
  };
  const std::vector<Tiling> tilings = {
      Tiling{1, false, 1, 1, 1, 1, 1, LoopOrder::n_k_m, SplitAxis::n},
      Tiling{2, false, 4, 16, 8, 32, 64, LoopOrder::n_k_m, SplitAxis::n},
      Tiling{2, false, 3, 5, 6, 10, 7, LoopOrder::m_n_k, SplitAxis::m},
      Tiling{3, false, 8, 64, 64, 64, 1024, LoopOrder::m_n_k, SplitAxis::n},
      Tiling{3, false, 2, 7, 2, 7, 33, LoopOrder::n_k_m, SplitAxis::m},
  };
  for (const auto& s : shapes) {
    ReferenceOperands naive = ReferenceOperands::make(s, 99);
    reference_naive(naive);
    for (const auto& t : tilings) {
      INFO(s.key() << " " << t.describe());
      ThreadPoolOptions o;
      o.threads = t.threads;
      ThreadPool pool(o);
      ReferenceOperands blocked = ReferenceOperands::make(s, 99);
      reference_blocked(blocked, t, pool);
      CHECK(blocked.y == naive.y);
      reference_blocked(blocked, t, pool);  // a second run starts from zero again
      CHECK(blocked.y == naive.y);
    }
  }
}

TEST_CASE("task grids cover every output element exactly once") {
  OpShape s{OpKind::gemm, TensorType::Q8_0, 37, 101, 64};
  for (SplitAxis split : {SplitAxis::n, SplitAxis::m}) {
    for (int64_t block : {1, 5, 16, 200}) {
      Tiling t;
      t.split = split;
      t.mc = block, t.nc = block;
      TaskGrid g{s, t};
      std::vector<int> hits(std::size_t(s.m * s.n));
      for (std::size_t task = 0; task < g.tasks(); ++task) {
        Range r = g.rows(task), c = g.cols(task);
        CHECK(r.begin < r.end);
        CHECK(c.begin < c.end);
        for (int64_t i = r.begin; i < r.end; ++i)
          for (int64_t j = c.begin; j < c.end; ++j) ++hits[std::size_t(i * s.n + j)];
      }
      for (int h : hits) REQUIRE(h == 1);
    }
  }
}

TEST_CASE("the reference refuses a tiling whose threads differ from the pool's") {
  OpShape s{OpKind::gemm, TensorType::Q8_0, 2, 4, 32};
  ReferenceOperands ops = ReferenceOperands::make(s, 1);
  ThreadPoolOptions o;
  o.threads = 1;
  ThreadPool pool(o);
  CHECK_THROWS_AS(reference_blocked(ops, Tiling{2, false, 1, 1, 1, 1, 32, LoopOrder::n_k_m, SplitAxis::n}, pool), Error);
}

TEST_CASE("tune() measures every candidate and keeps the fastest and records the rest") {
  topo::Machine m = topo::detect_machine();
  const std::vector<OpShape> shapes = {{OpKind::gemm, TensorType::Q4_K, 8, 64, 256},
                                       {OpKind::gate_up_swiglu, TensorType::Q8_0, 3, 40, 64},
                                       {OpKind::gemv, TensorType::Q4_K, 1, 5000, 256}};  // too wide: skipped
  CountingRunner runner;
  TuneOptions o;
  o.repeats = 3;
  o.warmups = 1;
  o.max_candidates = 4;
  Profile profile;
  auto results = tune(shapes, m, runner, o, profile);
  REQUIRE(results.size() == 3);
  CHECK(results[0].measured);
  CHECK(results[1].measured);
  CHECK_FALSE(results[2].measured);
  CHECK(results[2].skipped_because == "too wide for this test");
  CHECK(runner.prepared == 2);
  REQUIRE(profile.entries.size() == 2);
  int candidates = 0;
  for (const auto& e : profile.entries) {
    CHECK(e.runner == "counting");
    CHECK(e.best.runs_us.size() == 3);
    candidates += 1 + int(e.rejected.size());
    for (const auto& r : e.rejected) {
      CHECK(r.ratio >= 1.0);
      CHECK(r.measured.median_us >= e.best.median_us);
      CHECK_FALSE(r.measured.tiling == e.best.tiling);
    }
  }
  // Every candidate: one warm-up and three timed runs; plus at most one untimed wake-up run per
  // pool switch (candidates on different cpu sets), never more than one per timed run.
  CHECK(runner.runs >= candidates * (3 + 1));
  CHECK(runner.runs < candidates * (3 + 1) + candidates * 3);
  CHECK(candidates <= 8);
}

TEST_CASE("the reference runner says what it cannot measure") {
  ReferenceRunner r(1e6);
  CHECK(r.cannot_run({OpKind::gemm, TensorType::Q4_K, 4, 64, 256}).empty());
  CHECK(r.cannot_run({OpKind::gemm, TensorType::Q4_K, 1028, 12288, 4096}).find("limit") != std::string::npos);
  CHECK(r.name().find("not the JIT kernels") != std::string::npos);
}

TEST_CASE("decoder op shapes cover prefill and decode") {
  DecoderDims d{4096, 12288, 32, 8, 128, 151936, TensorType::Q4_K};
  auto v = decoder_op_shapes(d, 1028);
  REQUIRE(v.size() == 11);
  CHECK(v[3] == OpShape{OpKind::gate_up_swiglu, TensorType::Q4_K, 1028, 12288, 4096});
  CHECK(v[10] == OpShape{OpKind::gemv, TensorType::Q4_K, 1, 151936, 4096});
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 2, 3}) == 2.5);
  CHECK_THROWS_AS(decoder_op_shapes(DecoderDims{}, 10), Error);
}

TEST_CASE("ckjit tune on tiny shapes completes and writes a profile that ckjit plan uses") {
  std::string dir = temp_dir();
  std::string env = "XDG_CACHE_HOME='" + dir + "'";
  auto tune = run_ckjit(env, "tune --runner reference --no-peaks --shape gate_up:4x48x256:q4_k --shape gemm:3x20x64:f32 --repeats 2 --candidates 3");
  INFO(tune.out);
  REQUIRE(tune.status == 0);
  CHECK(tune.out.find("runner: reference") != std::string::npos);
  CHECK(tune.out.find("profile written: " + dir + "/ckjit/profile-") != std::string::npos);
  CHECK(tune.out.find("runs") != std::string::npos);  // the progress line

  // The written file is a valid profile for this machine.
  MachineIdentity id = MachineIdentity::of(topo::detect_machine());
  ProfileLoad l = load_profile(dir + "/ckjit/profile-" + id.key() + ".json", id);
  REQUIRE(l.profile);
  CHECK(l.profile->entries.size() == 2);

  auto plan = run_ckjit(env, "plan --op gate_up --m 4 --n 48 --k 256");
  CHECK(plan.status == 0);
  CHECK(plan.out.find("(profile " + dir) != std::string::npos);
  auto no_profile = run_ckjit(env, "plan --op gate_up --m 4 --n 48 --k 256 --no-profile");
  CHECK(no_profile.out.find("(cost model)") != std::string::npos);
  // `ckjit run` on a tiny pair (not the default 2b pair, 1.8 GB) takes the profile too.
  REQUIRE(run_ckjit(env, "synth -q --preset tiny --out '" + dir + "/m'").status == 0);
  const std::string run_tiny = "run -m '" + dir + "/m/tiny-Q4_K_M.gguf' -p hi -n 2";
  auto run = run_ckjit(env, run_tiny);
  INFO(run.out);
  CHECK(run.status == 0);
  CHECK(run.out.find("profile: " + dir) != std::string::npos);

  // A corrupt profile is reported and ignored, never fatal.
  {
    std::ofstream f(dir + "/ckjit/profile-" + id.key() + ".json");
    f << "{ corrupt";
  }
  auto plan2 = run_ckjit(env, "plan --op gate_up --m 4 --n 48 --k 256");
  CHECK(plan2.status == 0);
  CHECK(plan2.out.find("profile: ignored") != std::string::npos);
  auto run2 = run_ckjit(env, run_tiny);
  CHECK(run2.status == 0);
  CHECK(run2.out.find("profile: ignored") != std::string::npos);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("peak probes measure every rate the ISA has and the planner uses them") {
  topo::Machine m = topo::detect_machine();
  PeakProbeOptions o;
  o.dram_buffer_bytes = 8 << 20;
  o.compute_seconds = 0.005;
  o.repeats = 1;
  MeasuredPeaks p = measure_peaks(m, o);
  if (m.isa.avx2) CHECK(p.int8_gmacs_per_core > 0);
  if (m.isa.avx512bf16) CHECK(p.bf16_gmacs_per_core > 0);
  else CHECK(p.bf16_gmacs_per_core == 0);
  if (m.isa.avx2 && m.isa.fma) CHECK(p.f32_gmacs_per_core > 0);
  CHECK(p.dram_gbps > 0);
  CHECK(p.dram_gbps_per_core > 0);
  // (dram_gbps >= dram_gbps_per_core holds by construction, peak_probe.cpp takes the max): the
  // figures must be finite rates a machine can have, under 100 TB/s.
  CHECK(std::isfinite(p.dram_gbps));
  CHECK(p.dram_gbps < 1e5);
  CHECK(p.dram_gbps_per_core < 1e5);
  CHECK(p.how.find("8 MiB") != std::string::npos);

  PeakRates d = default_peak_rates(m);
  MeasuredPeaks only_dram;
  only_dram.dram_gbps = 7;
  PeakRates r = apply_measured(d, only_dram);
  CHECK(r.dram_gbps == 7);
  CHECK(r.int8_gmacs_per_core == d.int8_gmacs_per_core);  // unmeasured rates keep their defaults
  CHECK(r.source.find("measured") != std::string::npos);
}

TEST_CASE("ckjit tune --peaks stores measured rates that ckjit plan reports") {
  std::string dir = temp_dir();
  std::string env = "XDG_CACHE_HOME='" + dir + "'";
  auto tune = run_ckjit(env, "tune --peaks --peak-mib 8");
  INFO(tune.out);
  REQUIRE(tune.status == 0);
  CHECK(tune.out.find("peaks: int8") != std::string::npos);
  auto plan = run_ckjit(env, "plan --op gemv --m 1 --n 512 --k 512");
  CHECK(plan.out.find("peaks: measured by `ckjit tune`") != std::string::npos);
  CHECK(run_ckjit(env, "tune --peaks --no-peaks").status == 1);
  std::system(("rm -rf '" + dir + "'").c_str());
}

TEST_CASE("ckjit plan prints a plan with reasons or JSON and rejects bad input") {
  auto text = run_ckjit("", "plan --op gate_up --m 1028 --n 12288 --k 4096 --no-profile");
  REQUIRE(text.status == 0);
  CHECK(text.out.find("plan gate_up_swiglu:Q4_K:1028x12288x4096 (cost model)") != std::string::npos);
  CHECK(text.out.find("-bound") != std::string::npos);
  auto json = run_ckjit("", "plan --op gemv --m 1 --n 4096 --k 4096 --wtype q6_k --json --no-profile");
  REQUIRE(json.status == 0);
  JsonValue v = parse_json(json.out);
  CHECK(v.at("shape", "plan").as_string("shape") == "gemv:Q6_K:1x4096x4096");
  CHECK(v.at("tiling", "plan").at("threads", "tiling").as_int("threads") >= 1);
  CHECK(run_ckjit("", "plan --op conv --m 1 --n 2 --k 256").status == 1);
  CHECK(run_ckjit("", "plan --op gemm --m 1 --n 2 --k 100").status == 1);
  CHECK(run_ckjit("", "plan --op gemm --m 1 --n 2 --k 256 --threads 0").status == 1);
  CHECK(run_ckjit("", "tune").status == 1);
  CHECK(run_ckjit("", "tune --shape gemm:1x2").status == 1);
}

}  // TEST_SUITE
