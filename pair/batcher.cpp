#include "pair/batcher.h"

#include <algorithm>
#include <vector>

#include "runtime/error.h"

namespace ckjit::pair {

struct Batcher::Job {
  Context* ctx;
  const RenderedPrompt* prompt;
  const graph::GenerateOptions* o;
  const graph::GenerateCallbacks* cb;
  std::promise<graph::GenerateResult> done;
  int id = -1;
};

Batcher::Batcher(std::shared_ptr<const Model> model, int64_t max_streams, int threads)
    : model_(std::move(model)), max_streams_(max_streams), threads_(std::max(1, threads)) {
  if (max_streams_ < 1) throw Error("batcher: at least one stream", ErrorKind::invalid_argument);
  engine_ = std::thread([this] { loop(); });
}

Batcher::~Batcher() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  engine_.join();
}

graph::GenerateResult Batcher::generate(Context& ctx, const RenderedPrompt& prompt, const graph::GenerateOptions& o,
                                        const graph::GenerateCallbacks& cb) {
  if (&ctx.model() != model_.get()) throw Error("batcher: the context is of another model", ErrorKind::invalid_argument);
  Job job{&ctx, &prompt, &o, &cb, {}, -1};
  std::future<graph::GenerateResult> f = job.done.get_future();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_) throw Error("batcher: shut down");
    waiting_.push_back(&job);
  }
  cv_.notify_all();
  return f.get();
}

// Adds a waiting job to the scheduler (made, or made again with more attention scratch, while no
// stream runs); false when it must wait for a stream to finish first. Its errors end the job.
bool Batcher::start(Job& job) {
  graph::Session& s = job.ctx->session();
  const int64_t scratch = s.attention_scratch_per_worker();
  if (!sched_ || (scratch > sched_->att_scratch_per_worker() && sched_->active() == 0))
    sched_ = std::make_unique<graph::Scheduler>(model_->text(), model_->tokenizer(), max_streams_,
                                                std::max(scratch, sched_ ? sched_->att_scratch_per_worker() : 0), *pool_);
  if (sched_->active() >= max_streams_ || scratch > sched_->att_scratch_per_worker()) return false;
  try {
    job.id = job.prompt->bridge ? sched_->add(s, *job.prompt->bridge, *job.o, *job.cb) : sched_->add(s, job.prompt->ids, *job.o, *job.cb);
  } catch (...) {
    job.done.set_exception(std::current_exception());  // the caller may now return: job is not touched again
  }
  return true;
}

void Batcher::loop() {
  pool_ = Workers::for_budget(model_->machine(), threads_);
  std::vector<Job*> running;
  for (;;) {
    {
      std::unique_lock<std::mutex> l(mu_);
      cv_.wait(l, [&] { return stop_ || !waiting_.empty() || !running.empty(); });
      if (stop_ && waiting_.empty() && running.empty()) {
        sched_.reset();
        pool_.reset();  // on this thread: its pinning is undone here
        return;
      }
      // Arrival order: the first that cannot start yet holds the later ones back.
      while (!waiting_.empty()) {
        Job* job = waiting_.front();
        const size_t before = sched_ ? size_t(sched_->active()) : 0;
        if (!start(*job)) break;
        waiting_.pop_front();
        if (size_t(sched_->active()) > before) running.push_back(job);  // started (else it failed and is gone)
      }
    }
    if (running.empty()) continue;
    try {
      sched_->step();
    } catch (...) {
      // A step that throws (a callback, memory) ends every running stream with its error.
      for (Job* job : running) job->done.set_exception(std::current_exception());
      running.clear();
      sched_.reset();
      continue;
    }
    for (auto it = running.begin(); it != running.end();) {
      if (!sched_->done((*it)->id)) {
        ++it;
        continue;
      }
      (*it)->done.set_value(sched_->take_result((*it)->id));
      it = running.erase(it);
    }
  }
}

}  // namespace ckjit::pair
