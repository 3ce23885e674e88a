#include "jit/planner/tuner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "runtime/cpu_budget.h"
#include "runtime/error.h"

namespace ckjit::planner {
namespace {

using Clock = std::chrono::steady_clock;

// A one-line progress bar with an estimate of the time left (from the runs done so far).
class Progress {
 public:
  Progress(std::FILE* out, std::size_t total) : out_(out), total_(std::max<std::size_t>(1, total)), start_(Clock::now()) {
    tty_ = out_ && isatty(fileno(out_));
  }
  void step(const std::string& what, std::size_t n = 1) {
    done_ = std::min(total_, done_ + n);
    if (!out_) return;
    double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    double left = done_ ? elapsed / double(done_) * double(total_ - done_) : 0;
    const int width = 30;
    int filled = int(double(width) * double(done_) / double(total_));
    std::string bar(std::size_t(filled), '#');
    bar.resize(width, '.');
    char line[256];
    std::snprintf(line, sizeof line, "[%s] %3.0f%% %zu/%zu runs, %.1fs elapsed, ~%.1fs left  %s", bar.c_str(),
                  100.0 * double(done_) / double(total_), done_, total_, elapsed, left, what.c_str());
    // On a terminal redraw one line; in a log print a line per candidate only.
    if (tty_) std::fprintf(out_, "\r%-140s", line);
    else if (what != last_) std::fprintf(out_, "%s\n", line);
    last_ = what;
    std::fflush(out_);
  }
  void finish() {
    if (out_ && tty_) std::fprintf(out_, "\n");
  }
  // The total can shrink when a shape is skipped.
  void drop(std::size_t n) { total_ = std::max<std::size_t>(done_ + 1, total_ - std::min(total_, n)); }

 private:
  std::FILE* out_;
  std::size_t total_, done_ = 0;
  Clock::time_point start_;
  bool tty_ = false;
  std::string last_;
};

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<ShapeResult> tune(const std::vector<OpShape>& shapes, const topo::Machine& m, OpRunner& runner,
                              const TuneOptions& opts, Profile& profile) {
  if (opts.repeats < 1) throw Error("tune: repeats must be at least 1");
  PlannerOptions popts;
  popts.allow_smt = opts.allow_smt;
  popts.peaks = opts.peaks;
  const CpuBudget budget = cpu_budget(m);

  // Plan everything first so the progress bar knows the total.
  std::vector<std::vector<Plan>> plans(shapes.size());
  std::vector<ShapeResult> results(shapes.size());
  std::size_t total_runs = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    results[i].shape = shapes[i];
    results[i].skipped_because = runner.cannot_run(shapes[i]);
    if (!results[i].skipped_because.empty()) continue;
    plans[i] = plan_candidates(shapes[i], m, popts, opts.max_candidates);
    total_runs += plans[i].size() * std::size_t(opts.repeats + opts.warmups);
  }

  Progress progress(opts.progress, total_runs);
  std::map<std::vector<int>, std::unique_ptr<ThreadPool>> pools;  // one pool per cpu set
  auto pool_for = [&](const Plan& p) -> ThreadPool& {
    auto& slot = pools[p.cpus];
    if (!slot) slot = std::make_unique<ThreadPool>(pool_options(budget, p.cpus));
    return *slot;
  };

  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (plans[i].empty()) continue;
    const OpShape& s = shapes[i];
    runner.prepare(s);
    std::vector<Measurement> measured;
    for (const Plan& plan : plans[i]) {
      // Only one pool is alive at a time: idle pools would keep extra threads around.
      for (auto it = pools.begin(); it != pools.end();)
        it = it->first == plan.cpus ? std::next(it) : pools.erase(it);
      ThreadPool& pool = pool_for(plan);
      std::string label = s.key() + " " + plan.tiling.describe();
      for (int w = 0; w < opts.warmups; ++w) {
        runner.run(plan, pool);
        progress.step(label);
      }
      Measurement mm;
      mm.tiling = plan.tiling;
      mm.model_us = plan.cost.total_us;
      for (int r = 0; r < opts.repeats; ++r) {
        auto t0 = Clock::now();
        runner.run(plan, pool);
        mm.runs_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        progress.step(label);
      }
      mm.median_us = median(mm.runs_us);
      measured.push_back(std::move(mm));
    }
    auto best = std::min_element(measured.begin(), measured.end(),
                                 [](const Measurement& a, const Measurement& b) { return a.median_us < b.median_us; });
    ProfileEntry e;
    e.shape = s;
    e.runner = runner.name();
    e.best = *best;
    for (auto it = measured.begin(); it != measured.end(); ++it) {
      if (it == best) continue;
      double ratio = best->median_us > 0 ? it->median_us / best->median_us : 1.0;
      e.rejected.push_back({*it, std::max(ratio, 1e-9)});
    }
    std::sort(e.rejected.begin(), e.rejected.end(), [](auto& a, auto& b) { return a.ratio < b.ratio; });
    results[i].measured = true;
    results[i].entry = e;
    profile.upsert(std::move(e));
  }
  progress.finish();
  return results;
}

std::vector<OpShape> decoder_op_shapes(const DecoderDims& d, int64_t prefill_rows) {
  if (d.hidden < 1 || d.ffn < 1 || d.heads < 1 || d.kv_heads < 1 || d.head_dim < 1 || d.vocab < 1)
    throw Error("decoder dims must all be positive");
  if (prefill_rows < 1) throw Error("prefill rows must be at least 1");
  std::vector<OpShape> out;
  for (int64_t m : {prefill_rows, int64_t(1)}) {
    OpKind mat = m == 1 ? OpKind::gemv : OpKind::gemm;
    const int64_t q = d.heads * d.head_dim, kv = d.kv_heads * d.head_dim;
    out.push_back({mat, d.wtype, m, q, d.hidden});          // attn_q
    out.push_back({mat, d.wtype, m, kv, d.hidden});         // attn_k, attn_v
    out.push_back({mat, d.wtype, m, d.hidden, q});          // attn_output
    out.push_back({OpKind::gate_up_swiglu, d.wtype, m, d.ffn, d.hidden});  // ffn_gate + ffn_up
    out.push_back({mat, d.wtype, m, d.hidden, d.ffn});      // ffn_down
    if (m == 1) out.push_back({mat, d.wtype, m, d.vocab, d.hidden});  // output (LM head, last row only)
  }
  for (const auto& s : out) validate(s);
  return out;
}

}  // namespace ckjit::planner
