#pragma once
// The one worker team of a run: the planner's persistent ThreadPool (runtime/thread_pool.h: spins
// briefly, then sleeps on a futex; never spins under a CPU quota). run(n, fn) calls fn(task, worker)
// for every task in [0, n) and returns when all are done; the caller is worker 0. Created once per
// run — no threads are created per op or per token.
#include <cstdint>
#include <memory>

#include "runtime/thread_pool.h"
#include "topology/machine.h"

namespace ckjit {

class Workers {
 public:
  using TaskFn = ThreadPool::TaskFn;
  // threads workers, unpinned (other processes may share the CPUs); cpus: pin worker i to cpus[i].
  // spin_us: how long an idle worker spins before sleeping (decode issues ~200 short jobs per token).
  explicit Workers(int threads, std::vector<int> cpus = {}, int spin_us = 300);
  explicit Workers(const ThreadPoolOptions& options);
  // The pool `ckjit tune` measures with: `threads` workers (capped by the CPU budget) pinned one per
  // physical core of the usable cpus, blocking waits under a CPU quota.
  static std::unique_ptr<Workers> for_budget(const topo::Machine& machine, int threads);

  int size() const { return pool_->size(); }
  // The first exception a task throws is rethrown here after all workers are idle again.
  // fn is passed to the pool by reference (an 8-byte wrapper fits std::function's local buffer), so
  // dispatching a job allocates nothing — decode issues ~200 jobs per token.
  template <class F>
  void run(size_t n_tasks, const F& fn) {
    if (n_tasks == 1 || size() == 1) {
      for (size_t t = 0; t < n_tasks; ++t) fn(t, 0);
      return;
    }
    const TaskFn ref = FnRef<F>{&fn};
    pool_->run(n_tasks, ref);
  }
  ThreadPool& pool() { return *pool_; }

 private:
  template <class F>
  struct FnRef {
    const F* f;
    void operator()(size_t t, int w) const { (*f)(t, w); }
  };
  std::unique_ptr<ThreadPool> pool_;
};

// Splits [0, count) into `parts` contiguous ranges aligned to `align`; range i of parts.
struct Range { int64_t begin, end; };
Range split_range(int64_t count, int64_t parts, int64_t i, int64_t align = 1);

}  // namespace ckjit
