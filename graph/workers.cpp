#include "graph/workers.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>

namespace ckjit::graph {

Workers::Workers(int threads) {
  for (int w = 1; w < threads; ++w) threads_.emplace_back([this, w] { worker_main(w); });
}

Workers::~Workers() {
  {
    std::lock_guard<std::mutex> lk(mu_);
    stop_.store(true);
    generation_.fetch_add(1);
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void Workers::work(int worker) {
  for (;;) {
    size_t t = next_task_.fetch_add(1);
    if (t >= job_tasks_) break;
    try {
      (*job_)(t, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lk(err_mu_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

void Workers::worker_main(int worker) {
  uint64_t seen = 0;
  for (;;) {
    // Spin ~100 us for the next job before sleeping.
    auto t0 = std::chrono::steady_clock::now();
    int spins = 0;
    while (generation_.load(std::memory_order_acquire) == seen) {
      _mm_pause();
      if (++spins % 256 == 0 && std::chrono::steady_clock::now() - t0 > std::chrono::microseconds(100)) break;
    }
    if (generation_.load(std::memory_order_acquire) == seen) {
      std::unique_lock<std::mutex> lk(mu_);
      sleepers_.fetch_add(1);
      cv_.wait(lk, [&] { return generation_.load() != seen; });
      sleepers_.fetch_sub(1);
    }
    seen = generation_.load(std::memory_order_acquire);
    if (stop_.load()) return;
    work(worker);
    busy_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void Workers::run(size_t n_tasks, const TaskFn& fn) {
  if (n_tasks == 0) return;
  if (threads_.empty() || n_tasks == 1) {
    for (size_t t = 0; t < n_tasks; ++t) fn(t, 0);
    return;
  }
  job_ = &fn;
  job_tasks_ = n_tasks;
  next_task_.store(0);
  busy_.store(int(threads_.size()));
  generation_.fetch_add(1);  // seq_cst: pairs with a worker's sleepers_ increment
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lk(mu_); }
    cv_.notify_all();
  }
  work(0);
  while (busy_.load(std::memory_order_acquire) != 0) _mm_pause();
  job_ = nullptr;
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;
    std::rethrow_exception(e);
  }
}

Range split_range(int64_t count, int64_t parts, int64_t i, int64_t align) {
  const int64_t units = (count + align - 1) / align;
  const int64_t b = units * i / parts, e = units * (i + 1) / parts;
  return {std::min(count, b * align), std::min(count, e * align)};
}

}  // namespace ckjit::graph
