#pragma once
// One loaded pair (text model, optional vision tower) that runs the same prompt again and again —
// under the generated kernels or their scalar twins, teacher-forced on one trajectory, with a tap
// (and its replay overrides) attached — for ckjit xray. Loading once keeps the runs comparable and
// quick; the executor is switched around each run.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/generate.h"
#include "graph/session.h"
#include "jit/executor.h"
#include "pair/model.h"
#include "runtime/tap.h"
#include "xray/llama_dump.h"

namespace ckjit::xray {

struct RunnerOptions {
  std::string model, mmproj, image;  // image: one page, or empty for a text prompt; mmproj: "" finds it beside the model
  graph::PromptOptions prompt;
  int threads = 0;                   // 0: the machine's usable CPUs
  int64_t n_ctx = 4096, n_ubatch = 512;
  int image_min_tokens = 8, image_max_tokens = 4096;
  bool llama_order = false;
  graph::AttentionOrder attention = graph::AttentionOrder::tiled;
};

struct RunResult {
  std::vector<int32_t> generated;  // the trajectory: greedy, or the forced ids
  int64_t n_rows = 0;              // KV rows the run filled (prompt + decode steps)
  int64_t n_patches = 0;           // vision patches (0 without an image)
};

class Runner {
 public:
  explicit Runner(const RunnerOptions& o);
  ~Runner();
  // The prompt (greedy for n_predict steps when forced is empty), executor `ex`, checkpoints to tap.
  RunResult run(jit::Executor ex, const std::vector<int32_t>& forced, int n_predict, Tap& tap);
  DumpShape shape(const RunResult& r) const;
  const graph::TextModel& model() const { return pair_->text(); }
  int64_t n_vision_layers() const;
  int64_t n_deepstack() const;
  // The weight a checkpoint's op reads, e.g. "blk.1.attn_q.weight" for L1.q ("" for none).
  std::string weight_of(const std::string& checkpoint) const;

 private:
  RunnerOptions opt_;
  std::unique_ptr<Workers> pool_;
  std::shared_ptr<const pair::Model> pair_;
};

}  // namespace ckjit::xray
