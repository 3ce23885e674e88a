#include "jit/planner/tuner.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "topology/cpu_budget.h"
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
  // One pool alive at a time (two pools would both pin the calling thread and restore each
  // other's masks); candidates are grouped by cpu set so a round switches pools rarely.
  std::unique_ptr<ThreadPool> pool;
  std::vector<int> pool_cpus;
  auto pool_for = [&](const Plan& p, bool& fresh) -> ThreadPool& {
    fresh = !pool || pool_cpus != p.cpus;
    if (fresh) {
      pool.reset();
      pool = std::make_unique<ThreadPool>(pool_options(budget, p.cpus));
      pool_cpus = p.cpus;
    }
    return *pool;
  };

  for (std::size_t i = 0; i < shapes.size(); ++i) {
    if (plans[i].empty()) continue;
    const OpShape& s = shapes[i];
    const std::vector<Plan>& cand = plans[i];
    runner.prepare(s);
    std::vector<std::size_t> order(cand.size());
    for (std::size_t c = 0; c < order.size(); ++c) order[c] = c;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return cand[a].cpus < cand[b].cpus; });
    std::vector<Measurement> measured(cand.size());
    for (std::size_t c = 0; c < cand.size(); ++c) measured[c].tiling = cand[c].tiling, measured[c].model_us = cand[c].cost.total_us;
    bool fresh = false;
    for (int w = 0; w < opts.warmups; ++w)
      for (std::size_t c : order) {
        runner.run(cand[c], pool_for(cand[c], fresh));
        progress.step(s.key() + " warm-up");
      }
    // Timed runs in rounds, each round running every candidate once: on a shared machine a
    // change of load then hits all candidates alike instead of whichever ran at that moment.
    for (int r = 0; r < opts.repeats; ++r) {
      const std::string label = s.key() + " round " + std::to_string(r + 1) + "/" + std::to_string(opts.repeats);
      std::reverse(order.begin(), order.end());  // back and forth: a round starts on the last pool
      for (std::size_t c : order) {
        ThreadPool& p = pool_for(cand[c], fresh);
        // A fresh pool's first run wakes its threads: untimed when that is not negligible.
        if (fresh && !measured[c].runs_us.empty() && measured[c].runs_us.back() < 50e3) runner.run(cand[c], p);
        auto t0 = Clock::now();
        runner.run(cand[c], p);
        measured[c].runs_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
        progress.step(label);
      }
    }
    for (auto& mm : measured) mm.median_us = median(mm.runs_us);
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
