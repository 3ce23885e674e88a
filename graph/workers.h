#pragma once
// One persistent worker team for the whole run (no threads are created per op or per token).
// run(n, fn) calls fn(task, worker) for every task in [0, n) and returns when all are done; the
// caller is worker 0. Idle workers spin briefly (decode issues hundreds of small jobs per token,
// and waking a sleeping thread costs tens of microseconds), then sleep on a condition variable.
// Same calling convention as the planner's ThreadPool::run, so either can drive the decoder.
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ckjit::graph {

class Workers {
 public:
  using TaskFn = std::function<void(size_t task, int worker)>;
  explicit Workers(int threads);
  ~Workers();
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;

  int size() const { return int(threads_.size()) + 1; }
  // The first exception a task throws is rethrown here after all workers are idle again.
  void run(size_t n_tasks, const TaskFn& fn);

 private:
  void worker_main(int worker);
  void work(int worker);

  std::vector<std::thread> threads_;
  const TaskFn* job_ = nullptr;
  size_t job_tasks_ = 0;
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<size_t> next_task_{0};
  alignas(64) std::atomic<int> busy_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  std::mutex err_mu_;
  std::exception_ptr error_;
};

// Splits [0, count) into `parts` contiguous ranges aligned to `align`; range i of parts.
struct Range { int64_t begin, end; };
Range split_range(int64_t count, int64_t parts, int64_t i, int64_t align = 1);

}  // namespace ckjit::graph
