#pragma once
// The planner's plans for the decoder's Linear ops. One LinearPlanner per model load asks the
// planner (jit/planner) once per distinct op shape — a prefill GEMM at M = n_ubatch, a decode GEMV
// at M = 1, the fused Gate-Up SwiGLU — taking the tuned profile's entry measured by the JIT runner
// when one matches, else the cost model's choice. run_planned() cuts an m x n output into the
// plan's tasks (planner::TaskGrid) and, inside a task, into mc x nc tiles in the plan's loop
// order; a plan for fewer threads than the pool has keeps only that many workers busy.
// Tiling changes which tile computes an output, never the float order inside one output.
#include <algorithm>
#include <atomic>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "topology/workers.h"
#include "jit/kernels.h"
#include "jit/planner/planner.h"
#include "jit/planner/task_grid.h"
#include "jit/planner/profile.h"
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

// Calls tile_fn(jit::Tile) for every tile of an m x n output cut as `t` says: the plan's tasks
// (planner::TaskGrid: nc-wide column strips, or mc-high row strips), tiles of at most mc x nc in
// the plan's loop order inside a task, at most t.threads workers busy. Each task is cut further
// into about 4 pieces per busy worker along its split axis (aligned to the register block) that
// the workers take dynamically: the run's cores are shared (other processes, SMT siblings), and
// one preempted worker holding a whole strip would stall every op.
template <class F>
void run_planned(Workers& pool, const Tiling& t, int64_t m, int64_t n, const F& tile_fn) {
  OpShape s;
  s.m = m;
  s.n = n;
  const planner::TaskGrid grid{s, t};
  const size_t tasks = grid.tasks();
  const int threads = std::max(1, std::min(t.threads, pool.size()));
  const size_t sub = std::max<size_t>(1, (4 * size_t(threads) + tasks - 1) / tasks);
  const size_t pieces = tasks * sub;
  auto run_piece = [&](size_t piece) {
    const size_t task = piece / sub, part = piece % sub;
    planner::Range rows = grid.rows(task), cols = grid.cols(task);
    if (t.split == SplitAxis::n) {
      const Range r = split_range(cols.end - cols.begin, int64_t(sub), int64_t(part), t.nr);
      cols = {cols.begin + r.begin, cols.begin + r.end};
    } else {
      const Range r = split_range(rows.end - rows.begin, int64_t(sub), int64_t(part), t.mr);
      rows = {rows.begin + r.begin, rows.begin + r.end};
    }
    planner::for_each_tile(t, rows, cols, [&](planner::Range r, planner::Range c) {
      tile_fn(jit::Tile{r.begin, r.end, c.begin, c.end});
    });
  };
  if (threads >= pool.size()) {
    pool.run(pieces, [&](size_t piece, int) { run_piece(piece); });
    return;
  }
  // A plan for fewer threads than the pool: that many workers share the pieces.
  std::atomic<size_t> next{0};
  pool.run(size_t(threads), [&](size_t, int) {
    for (size_t piece; (piece = next.fetch_add(1, std::memory_order_relaxed)) < pieces;) run_piece(piece);
  });
}

}  // namespace ckjit::graph
