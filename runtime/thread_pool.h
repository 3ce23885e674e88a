#pragma once
// Persistent thread pool for the kernels: one worker per chosen cpu, pinned there, created once.
// The caller of run() is worker 0, so a pool of N threads starts N-1 helpers. Workers wait for
// work by spinning briefly and then sleeping on a futex; when the process runs under a CPU quota
// (cgroup cpu.max) they never spin: a spinning thread burns quota and the whole group is
// throttled until the next period.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ckjit {

struct ThreadPoolOptions {
  // OS cpu id for each worker (worker 0 = the calling thread). Empty: `threads` unpinned workers.
  std::vector<int> cpus;
  int threads = 1;             // used only when `cpus` is empty
  int max_threads = 0;         // the usable CPU budget; > 0 caps the pool size (extra cpus dropped)
  bool blocking_wait = false;  // no spinning at all (set when a CPU quota is enforced)
  int spin_us = 50;            // how long a waiting thread spins before sleeping on the futex
  bool pin_caller = true;      // pin the constructing thread to cpus[0]; restored by the destructor
};

class ThreadPool {
 public:
  using TaskFn = std::function<void(std::size_t task, int worker)>;

  explicit ThreadPool(ThreadPoolOptions options);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return int(workers_cpu_.size()); }
  // cpu id each worker was pinned to (-1 where unpinned or where pinning failed).
  const std::vector<int>& worker_cpus() const { return workers_cpu_; }
  bool blocking_wait() const { return options_.blocking_wait; }
  // Why the pool is smaller than asked or a cpu could not be pinned; empty when all went as asked.
  const std::vector<std::string>& notes() const { return notes_; }

  // Runs fn(task, worker) for every task in [0, n_tasks) and returns when all are done. Tasks are
  // claimed dynamically (an atomic counter), so uneven tasks balance themselves. The first
  // exception thrown by a task is rethrown here after every worker has stopped. A run() issued
  // from inside a task runs serially on the calling worker (no deadlock).
  void run(std::size_t n_tasks, const TaskFn& fn);

  // A 2-D grid of blocks, row-major task order: fn(row, col, worker).
  void parallel_for_2d(std::size_t rows, std::size_t cols,
                       const std::function<void(std::size_t row, std::size_t col, int worker)>& fn);

 private:
  struct alignas(64) WorkerSlot {
    std::atomic<uint32_t> go{0};        // generation to run; futex word
    std::atomic<uint32_t> sleeping{0};  // 1 while the worker sleeps (or is about to) on `go`
  };
  void worker_main(int worker);
  void work_on_current_job(int worker);
  void wait_for_helpers();
  // Spins until pred() or spin_us elapse (not at all with blocking_wait); returns pred().
  template <class Pred>
  bool spin_until(Pred pred) const;

  ThreadPoolOptions options_;
  std::vector<int> workers_cpu_;
  std::vector<std::string> notes_;
  std::vector<std::thread> threads_;
  std::unique_ptr<WorkerSlot[]> slots_;

  // The current job (written by the caller before bumping the generations).
  const TaskFn* job_ = nullptr;
  std::size_t job_tasks_ = 0;
  alignas(64) std::atomic<std::size_t> next_task_{0};
  alignas(64) std::atomic<uint32_t> helpers_left_{0};  // futex word the caller sleeps on
  std::atomic<uint32_t> caller_sleeping_{0};
  uint32_t generation_ = 0;
  std::atomic<bool> stopping_{false};

  std::mutex error_mutex_;
  std::exception_ptr error_;

  bool restore_caller_affinity_ = false;
  std::vector<int> caller_affinity_before_;
  std::mutex run_mutex_;  // one job at a time
};

}  // namespace ckjit
