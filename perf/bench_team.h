#pragma once
// A fixed team of pinned worker threads for benchmarks: run(fn) calls fn(t) on every thread
// t = 0..n-1 (t = 0 is the caller) and returns when all are done. Spin-waits, so dispatch costs
// microseconds and does not distort sub-millisecond kernels. The team pins the caller to CPU 0 and
// gives the caller its original CPU set back when it ends: threads the caller starts later (ggml's
// own pool) inherit that set, and must not be confined to CPU 0 next to spinning workers.
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <functional>
#include <thread>
#include <vector>

namespace ckjit::bench {

inline cpu_set_t current_affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  pthread_getaffinity_np(pthread_self(), sizeof set, &set);
  return set;
}

inline void set_affinity(const cpu_set_t& set) { pthread_setaffinity_np(pthread_self(), sizeof set, &set); }

inline void pin_to_cpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu % CPU_SETSIZE, &set);
  pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

class Team {
 public:
  explicit Team(int n) : n_(n), caller_affinity_(current_affinity()) {
    pin_to_cpu(0);
    for (int t = 1; t < n; ++t)
      workers_.emplace_back([this, t] {
        pin_to_cpu(t);
        uint64_t seen = 0;
        for (;;) {
          uint64_t g;
          while ((g = gen_.load(std::memory_order_acquire)) == seen) __builtin_ia32_pause();
          seen = g;
          if (stop_) return;
          (*fn_)(t);
          done_.fetch_add(1, std::memory_order_acq_rel);
        }
      });
  }
  ~Team() {
    stop_ = true;
    gen_.fetch_add(1, std::memory_order_acq_rel);
    for (auto& w : workers_) w.join();
    set_affinity(caller_affinity_);
  }
  Team(const Team&) = delete;
  Team& operator=(const Team&) = delete;
  int size() const { return n_; }
  void run(const std::function<void(int)>& fn) {
    fn_ = &fn;
    done_.store(0, std::memory_order_release);
    gen_.fetch_add(1, std::memory_order_acq_rel);
    fn(0);
    while (done_.load(std::memory_order_acquire) != n_ - 1) __builtin_ia32_pause();
  }

 private:
  int n_;
  cpu_set_t caller_affinity_;
  std::vector<std::thread> workers_;
  const std::function<void(int)>* fn_ = nullptr;
  std::atomic<uint64_t> gen_{0};
  std::atomic<int> done_{0};
  std::atomic<bool> stop_{false};
};

}  // namespace ckjit::bench
