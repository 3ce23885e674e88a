#pragma once
// The planner's plans for the decoder's Linear ops. One LinearPlanner per model load asks the
// planner (jit/planner) once per distinct op shape — a prefill GEMM at M = n_ubatch, a decode GEMV
// at M = 1, the fused Gate-Up SwiGLU — taking the tuned profile's entry measured by the JIT runner
// when one matches, else the cost model's choice. run_planned() cuts an m x n output into the
// plan's tasks (planner::TaskGrid) and, inside a task, into mc x nc tiles in the plan's loop
// order; a plan for fewer threads than the pool has uses only that many tasks at a time.
// Tiling changes which tile computes an output, never the float order inside one output.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "graph/workers.h"
#include "jit/kernels.h"
#include "jit/planner/planner.h"
#include "jit/planner/task_grid.h"
#include "runtime/profile.h"
#include "topology/machine.h"

namespace ckjit::graph {

class LinearPlanner {
 public:
  // threads: the run's pool size (plans use at most that many); profile: nullopt = cost model only.
  LinearPlanner(topo::Machine machine, int threads, std::optional<Profile> profile = std::nullopt,
                std::string profile_path = {});

  // The plan for `shape` (cached per shape): the profile entry whose runner is the JIT runner when
  // it matches and fits the pool, otherwise the cost model's.
  const planner::Plan& plan(const OpShape& shape);
  bool from_profile(const planner::Plan& p) const { return p.source.rfind("profile", 0) == 0; }
  // Called by Linear when a plan's kernel could not be generated (the hard-coded block is used).
  void note_fallback(const OpShape& shape, const std::string& why);
  int threads() const { return threads_; }
  // One line per distinct shape: the tiling and where it came from ("profile" / "cost model").
  std::vector<std::string> report() const;

 private:
  topo::Machine machine_;
  int threads_;
  std::optional<Profile> profile_;
  std::string profile_path_;
  std::map<std::string, planner::Plan> plans_;  // by OpShape::key()
  std::vector<std::string> order_;               // keys in first-use order
  std::map<std::string, std::string> fallbacks_;
};

// Calls tile_fn(jit::Tile) for every mc x nc tile of an m x n output, cut into tasks as `t` says;
// at most t.threads tasks run at once.
template <class F>
void run_planned(Workers& pool, const Tiling& t, int64_t m, int64_t n, const F& tile_fn) {
  OpShape s;
  s.m = m;
  s.n = n;
  const planner::TaskGrid grid{s, t};
  const size_t tasks = grid.tasks();
  auto run_task = [&](size_t task) {
    const planner::Range rows = grid.rows(task), cols = grid.cols(task);
    auto tile = [&](int64_t i, int64_t j) {
      tile_fn(jit::Tile{i, std::min(i + t.mc, rows.end), j, std::min(j + t.nc, cols.end)});
    };
    if (t.order == LoopOrder::n_k_m) {
      for (int64_t j = cols.begin; j < cols.end; j += t.nc)
        for (int64_t i = rows.begin; i < rows.end; i += t.mc) tile(i, j);
    } else {
      for (int64_t i = rows.begin; i < rows.end; i += t.mc)
        for (int64_t j = cols.begin; j < cols.end; j += t.nc) tile(i, j);
    }
  };
  const size_t active = std::min<size_t>(tasks, size_t(std::max(1, std::min(t.threads, pool.size()))));
  if (active >= size_t(pool.size()) || active == tasks) {
    pool.run(tasks, [&](size_t task, int) { run_task(task); });
    return;
  }
  // Fewer threads than the pool: `active` strands, each taking every active-th task.
  pool.run(active, [&](size_t w, int) {
    for (size_t task = w; task < tasks; task += active) run_task(task);
  });
}

}  // namespace ckjit::graph
