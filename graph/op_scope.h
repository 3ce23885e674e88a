#pragma once
// The one instrumentation hook of a decoder op: an OpScope around the op times it into the op
// profile and, when the op ends, publishes its output checkpoints (runtime/checkpoints.h) to the
// tap. With neither attached it costs the op a pointer test. Tap overrides (same-input replay)
// rewrite a checkpoint's buffer in place when it is published, so each checkpoint is published
// as soon as its op has written it and before anything reads it.
#include <array>
#include <chrono>
#include <cstdint>
#include <initializer_list>

#include "runtime/checkpoints.h"
#include "runtime/op_profile.h"
#include "runtime/tap.h"

namespace ckjit::graph {

// Who watches a chunk: either may be null. row0: the sequence position of the chunk's first row.
struct Observers {
  OpProfile* profile = nullptr;
  Tap* tap = nullptr;
  int64_t row0 = 0;
};

// An op output: `cols` floats per row (row stride cols), named `suffix` ("L<layer>.<suffix>"; the
// whole name for layer -1).
struct Checkpoint {
  const char* suffix;
  float* data;
  int64_t cols;
};

class OpScope {
 public:
  // Times op `op` (nullptr: an untimed scope that only publishes). Publishes call.m rows of each
  // checkpoint in `outputs` at the end, at positions pos[i] (row0 + i when pos is null).
  OpScope(const Observers& obs, const char* op, int layer, OpWork work, OpCall call,
          std::initializer_list<Checkpoint> outputs = {}, const int64_t* pos = nullptr)
      : obs_(obs), op_(op), layer_(layer), work_(work), call_(call), pos_(pos) {
    if (obs_.tap)
      for (const Checkpoint& c : outputs)
        if (n_outputs_ < kMaxOutputs) outputs_[size_t(n_outputs_++)] = c;
    if (obs_.profile && op_) t0_ = std::chrono::steady_clock::now();
  }
  ~OpScope() {
    if (obs_.profile && op_)
      obs_.profile->add(op_, layer_, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count(),
                        work_, call_);
    for (int i = 0; i < n_outputs_; ++i) publish(outputs_[size_t(i)]);
  }
  OpScope(const OpScope&) = delete;
  OpScope& operator=(const OpScope&) = delete;

  // Publishes a checkpoint the op writes before it ends (a value a later step of the op reads).
  void publish(const Checkpoint& c) const {
    if (!obs_.tap) return;
    const std::string name = layer_ < 0 ? std::string(c.suffix) : layer_checkpoint('L', layer_, c.suffix);
    obs_.tap->publish(name, c.data, call_.m, c.cols, c.cols, pos_ ? 0 : obs_.row0, pos_);
  }

 private:
  static constexpr int kMaxOutputs = 3;  // Q, K, V
  const Observers& obs_;
  const char* op_;
  int layer_;
  OpWork work_;
  OpCall call_;
  const int64_t* pos_;
  std::array<Checkpoint, kMaxOutputs> outputs_{};
  int n_outputs_ = 0;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace ckjit::graph
