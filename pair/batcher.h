#pragma once
// Continuous batching for callers on several threads (a server's requests): generate() blocks its
// caller while one engine thread runs every call's stream in one graph::Scheduler — a new stream
// joins between steps, its prompt prefilled in chunks between the others' decode steps, and each
// decode step serves every stream at once. Each call gets exactly what Context::generate would give
// it alone. The callbacks run on the engine thread.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <future>
#include <memory>
#include <mutex>
#include <thread>

#include "graph/generate.h"
#include "graph/scheduler.h"
#include "pair/context.h"
#include "pair/prompt.h"
#include "topology/workers.h"

namespace ckjit::pair {

class Batcher {
 public:
  // Up to max_streams calls run at once (more wait for a free place, in arrival order); the decode
  // steps run on `threads` workers of the engine's own, placed as a context's are
  // (Workers::for_budget, made on the engine thread: its worker 0), so they do not inherit the
  // affinity of the thread that made the batcher.
  Batcher(std::shared_ptr<const Model> model, int64_t max_streams, int threads);
  // Waits for the running calls to finish.
  ~Batcher();
  Batcher(const Batcher&) = delete;
  Batcher& operator=(const Batcher&) = delete;

  // Runs the prompt on ctx (a context of this model that no other call uses meanwhile; prefill on
  // its own workers) and returns when its stream is done. Errors: what Context::generate throws.
  graph::GenerateResult generate(Context& ctx, const RenderedPrompt& prompt, const graph::GenerateOptions& o,
                                 const graph::GenerateCallbacks& cb);

 private:
  struct Job;
  void loop();
  bool start(Job& job);

  std::shared_ptr<const Model> model_;
  int64_t max_streams_;
  int threads_;
  std::unique_ptr<Workers> pool_;  // made and used on the engine thread
  std::unique_ptr<graph::Scheduler> sched_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job*> waiting_;
  bool stop_ = false;
  std::thread engine_;
};

}  // namespace ckjit::pair
