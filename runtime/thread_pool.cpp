#include "runtime/thread_pool.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <set>

#include "runtime/error.h"

namespace ckjit {
namespace {

// The pool's futex words are std::atomic<uint32_t>, which is a plain 32-bit word on Linux/x86-64.
static_assert(sizeof(std::atomic<uint32_t>) == sizeof(uint32_t));

void futex_wait(std::atomic<uint32_t>* word, uint32_t expected) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}
void futex_wake_all(std::atomic<uint32_t>* word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(word), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

bool pin_thread(pthread_t thread, int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  return pthread_setaffinity_np(thread, sizeof set, &set) == 0;
}

// True while this thread executes a task of some pool: a nested run() then runs serially.
thread_local bool t_inside_task = false;

}  // namespace

template <class Pred>
bool ThreadPool::spin_until(Pred pred) const {
  if (options_.blocking_wait || options_.spin_us <= 0) return pred();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(options_.spin_us);
  for (;;) {
    for (int i = 0; i < 16; ++i) {
      if (pred()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return pred();
  }
}

ThreadPool::ThreadPool(ThreadPoolOptions options) : options_(std::move(options)) {
  std::vector<int> cpus = options_.cpus;
  std::set<int> seen;
  for (int c : cpus) {
    if (c < 0 || c >= CPU_SETSIZE) throw Error("thread pool: cpu id " + std::to_string(c) + " out of range");
    if (!seen.insert(c).second) throw Error("thread pool: cpu " + std::to_string(c) + " listed twice");
  }
  int wanted = cpus.empty() ? options_.threads : int(cpus.size());
  if (wanted < 1) throw Error("thread pool: needs at least one thread, got " + std::to_string(wanted));
  int n = wanted;
  if (options_.max_threads > 0 && n > options_.max_threads) {
    n = options_.max_threads;
    notes_.push_back("asked for " + std::to_string(wanted) + " threads; capped to the CPU budget of " +
                     std::to_string(n));
  }
  if (!cpus.empty()) cpus.resize(std::size_t(n));
  workers_cpu_.assign(std::size_t(n), -1);

  if (!cpus.empty() && options_.pin_caller) {
    cpu_set_t before;
    CPU_ZERO(&before);
    if (sched_getaffinity(0, sizeof before, &before) == 0) {
      for (int i = 0; i < CPU_SETSIZE; ++i)
        if (CPU_ISSET(i, &before)) caller_affinity_before_.push_back(i);
    }
    if (pin_thread(pthread_self(), cpus[0])) {
      workers_cpu_[0] = cpus[0];
      restore_caller_affinity_ = !caller_affinity_before_.empty();
    } else {
      notes_.push_back("could not pin the calling thread to cpu " + std::to_string(cpus[0]));
    }
  }

  slots_ = std::make_unique<WorkerSlot[]>(std::size_t(n));
  threads_.reserve(std::size_t(n - 1));
  for (int w = 1; w < n; ++w) {
    threads_.emplace_back([this, w] { worker_main(w); });
    if (!cpus.empty()) {
      if (pin_thread(threads_.back().native_handle(), cpus[std::size_t(w)]))
        workers_cpu_[std::size_t(w)] = cpus[std::size_t(w)];
      else
        notes_.push_back("could not pin worker " + std::to_string(w) + " to cpu " + std::to_string(cpus[std::size_t(w)]));
    }
  }
}

ThreadPool::~ThreadPool() {
  stopping_.store(true);
  for (int w = 1; w < size(); ++w) {
    WorkerSlot& s = slots_[std::size_t(w)];
    s.go.fetch_add(1);
    futex_wake_all(&s.go);
  }
  for (auto& t : threads_) t.join();
  if (restore_caller_affinity_) {
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : caller_affinity_before_) CPU_SET(c, &set);
    sched_setaffinity(0, sizeof set, &set);
  }
}

void ThreadPool::worker_main(int worker) {
  WorkerSlot& slot = slots_[std::size_t(worker)];
  uint32_t seen = 0;
  for (;;) {
    // Wait for a new generation: spin a little unless the quota forbids it, then sleep.
    if (!spin_until([&] { return slot.go.load(std::memory_order_acquire) != seen; })) {
      slot.sleeping.store(1);
      while (slot.go.load() == seen) futex_wait(&slot.go, seen);
      slot.sleeping.store(0);
    }
    seen = slot.go.load(std::memory_order_acquire);
    if (stopping_.load()) return;
    work_on_current_job(worker);
    if (helpers_left_.fetch_sub(1) == 1 && caller_sleeping_.load()) futex_wake_all(&helpers_left_);
  }
}

void ThreadPool::work_on_current_job(int worker) {
  t_inside_task = true;
  for (;;) {
    std::size_t t = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (t >= job_tasks_) break;
    try {
      (*job_)(t, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex_);
      if (!error_) error_ = std::current_exception();
      next_task_.store(job_tasks_);  // stop handing out tasks
    }
  }
  t_inside_task = false;
}

void ThreadPool::wait_for_helpers() {
  if (spin_until([&] { return helpers_left_.load(std::memory_order_acquire) == 0; })) return;
  caller_sleeping_.store(1);
  for (uint32_t left; (left = helpers_left_.load()) != 0;) futex_wait(&helpers_left_, left);
  caller_sleeping_.store(0);
}

void ThreadPool::run(std::size_t n_tasks, const TaskFn& fn) {
  if (n_tasks == 0) return;
  if (t_inside_task) {  // nested: serial on this worker
    for (std::size_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  std::lock_guard<std::mutex> lock(run_mutex_);
  int helpers = int(std::min<std::size_t>(std::size_t(size() - 1), n_tasks - 1));
  job_ = &fn;
  job_tasks_ = n_tasks;
  error_ = nullptr;
  next_task_.store(0, std::memory_order_relaxed);
  helpers_left_.store(uint32_t(helpers));
  ++generation_;
  for (int w = 1; w <= helpers; ++w) {
    WorkerSlot& s = slots_[std::size_t(w)];
    s.go.store(generation_);
    if (s.sleeping.load()) futex_wake_all(&s.go);
  }
  work_on_current_job(0);
  if (helpers > 0) wait_for_helpers();
  job_ = nullptr;
  if (error_) std::rethrow_exception(error_);
}

void ThreadPool::parallel_for_2d(std::size_t rows, std::size_t cols,
                                 const std::function<void(std::size_t, std::size_t, int)>& fn) {
  if (rows == 0 || cols == 0) return;
  run(rows * cols, [&](std::size_t t, int worker) { fn(t / cols, t % cols, worker); });
}

}  // namespace ckjit
