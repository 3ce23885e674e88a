// Planner benchmark (not a test): for the 8B Gate-Up prefill shape and the 2B decode GEMVs, time
// the planner's untuned default plan and the tuner's sweep of candidates with the JIT kernels,
// print default vs tuned best (ratio) and the 1 -> 2 thread scaling (best measured of each count).
//   bench_planner [--runs 5] [--gemv-runs 21] [--candidates 10] [--only gateup|gemv]
// The tuner times candidates in interleaved rounds (each round runs every candidate once).
// Decode weights rotate through copies (2 x L3 of bytes) so each run reads them from DRAM.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "jit/planner/jit_runner.h"
#include "jit/planner/planner.h"
#include "jit/planner/tuner.h"
#include "topology/cpu_budget.h"
#include "runtime/thread_pool.h"
#include "jit/planner/profile.h"
#include "topology/machine.h"

using namespace ckjit;
using namespace ckjit::planner;

namespace {

std::string loadavg() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

std::string ms(double us) {
  char b[32];
  if (us >= 1e3) std::snprintf(b, sizeof b, "%.2f ms", us / 1e3);
  else std::snprintf(b, sizeof b, "%.1f us", us);
  return b;
}

// Medians of `runs` timed runs of each plan, in interleaved rounds (after one warm-up each).
std::vector<double> time_plans(JitRunner& runner, const std::vector<Plan>& plans, int runs) {
  const CpuBudget budget = cpu_budget(topo::detect_machine());
  std::vector<std::vector<double>> us(plans.size());
  for (int r = -1; r < runs; ++r)
    for (std::size_t i = 0; i < plans.size(); ++i) {
      ThreadPool pool(pool_options(budget, plans[i].cpus));
      runner.run(plans[i], pool);  // wakes the fresh pool's threads
      auto t0 = std::chrono::steady_clock::now();
      runner.run(plans[i], pool);
      double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (r >= 0) us[i].push_back(t);
    }
  std::vector<double> med;
  for (auto& v : us) med.push_back(median(v));
  return med;
}

void bench_shape(const OpShape& s, const topo::Machine& m, JitRunner& runner, int runs, std::size_t candidates) {
  std::printf("\n== %s (%.3g GMAC, load average %s)\n", s.key().c_str(), s.macs() / 1e9, loadavg().c_str());
  const Plan def = plan_op(s, m);
  std::printf("planner default (untuned): %s, expected %s, %s-bound\n", def.tiling.describe().c_str(),
              ms(def.cost.total_us).c_str(), def.cost.bound.c_str());
  TuneOptions o;
  o.repeats = runs;
  o.warmups = 1;
  o.max_candidates = candidates;
  o.progress = stderr;
  Profile profile;
  auto res = tune({s}, m, runner, o, profile);
  if (!res[0].measured) {
    std::printf("skipped: %s\n", res[0].skipped_because.c_str());
    return;
  }
  const ProfileEntry& e = res[0].entry;
  std::vector<Measurement> all = {e.best};
  for (const auto& r : e.rejected) all.push_back(r.measured);
  const Measurement* def_m = nullptr;
  std::map<int, const Measurement*> best_per_threads;
  std::printf("%-70s %12s %12s %7s\n", "candidate", "median", "model", "ratio");
  for (const auto& mm : all) {
    if (mm.tiling == def.tiling) def_m = &mm;
    auto& b = best_per_threads[mm.tiling.threads];
    if (!b || mm.median_us < b->median_us) b = &mm;
    std::printf("%-70s %12s %12s %6.2fx%s\n", mm.tiling.describe().c_str(), ms(mm.median_us).c_str(),
                ms(mm.model_us).c_str(), mm.median_us / e.best.median_us, mm.tiling == def.tiling ? "  <- default" : "");
  }
  std::printf("tuned best: %s %s (%.1f GMAC/s)\n", e.best.tiling.describe().c_str(), ms(e.best.median_us).c_str(),
              s.macs() / e.best.median_us / 1e3);
  if (def_m)
    std::printf("RESULT %s default/best = %.3f (default %s, best %s)%s\n", s.key().c_str(),
                def_m->median_us / e.best.median_us, ms(def_m->median_us).c_str(), ms(e.best.median_us).c_str(),
                def_m->median_us <= 1.10 * e.best.median_us ? " within 10%" : " NOT within 10%");
  if (best_per_threads.count(1) && best_per_threads.count(2))
    std::printf("best measured per thread count: 1 thread %s, 2 threads %s (%.2fx; different blocks)\n",
                ms(best_per_threads[1]->median_us).c_str(), ms(best_per_threads[2]->median_us).c_str(),
                best_per_threads[1]->median_us / best_per_threads[2]->median_us);
  // Thread scaling of one tiling: the best two-thread tiling's blocks on 1 and on 2 threads (a
  // one-thread tiling may have a single task, which a second thread could not share).
  if (best_per_threads.count(2)) {
    Tiling t1 = best_per_threads[2]->tiling, t2 = t1;
    t1.threads = 1;
    auto med = time_plans(runner, {plan_for_tiling(s, t1, m), plan_for_tiling(s, t2, m)}, runs);
    std::printf("RESULT %s threads 1 -> 2 (%s blocks): %s -> %s = %.2fx\n", s.key().c_str(),
                t2.describe().c_str(), ms(med[0]).c_str(), ms(med[1]).c_str(), med[0] / med[1]);
  }
  std::printf("load average after: %s\n", loadavg().c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5, gemv_runs = 21;
  std::size_t candidates = 10;
  std::string only;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc) runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--gemv-runs" && i + 1 < argc) gemv_runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--candidates" && i + 1 < argc) candidates = std::size_t(std::max(1, std::atoi(argv[++i])));
    else if (a == "--only" && i + 1 < argc) only = argv[++i];
    else {
      std::fprintf(stderr, "usage: bench_planner [--runs 5] [--gemv-runs 21] [--candidates 10] [--only gateup|gemv]\n");
      return 2;
    }
  }
  auto m = topo::detect_machine();
  const std::size_t l3 = m.cache_bytes(3);
  std::printf("machine: %s\nL3 %zu MiB; load average at start %s (the machine is shared with other jobs)\n",
              m.name().c_str(), l3 >> 20, loadavg().c_str());
  JitRunner runner(1e12, 2 * l3);
  std::printf("runner: %s; median of %d runs (GEMV %d) after a warm-up, %zu candidates per shape\n",
              runner.name().c_str(), runs, gemv_runs, candidates);
  std::vector<OpShape> shapes;
  if (only.empty() || only == "gateup") shapes.push_back({OpKind::gate_up_swiglu, TensorType::Q4_K, 1028, 12288, 4096});
  if (only.empty() || only == "gemv") {
    shapes.push_back({OpKind::gemv, TensorType::Q4_K, 1, 6144, 2048});
    shapes.push_back({OpKind::gemv, TensorType::Q4_K, 1, 2048, 2048});
  }
  for (const auto& s : shapes) bench_shape(s, m, runner, s.kind == OpKind::gemv ? gemv_runs : runs, candidates);
  return 0;
}
