#pragma once
// `ckjit tune`'s engine: for each op shape, ask the planner for its candidate tilings (every
// thread count within the budget, the best register/cache blocks), run each with an OpRunner
// (warm-up, then the median of several timed runs), keep the fastest and record the rest with
// their ratio to it. Progress and time left go to a FILE* (stderr in the CLI).
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "jit/planner/op_runner.h"
#include "jit/planner/planner.h"
#include "jit/planner/profile.h"
#include "topology/machine.h"

namespace ckjit::planner {

struct TuneOptions {
  int repeats = 5;                 // timed runs per candidate; the median is kept
  int warmups = 1;                 // untimed runs first (page faults, caches, pool wake-up)
  std::size_t max_candidates = 6;  // per shape
  bool allow_smt = false;          // also try workers on SMT siblings
  std::optional<PeakRates> peaks;  // measured rates for the model's expectations (else defaults)
  std::FILE* progress = nullptr;   // progress bar with ETA; nullptr: silent
};

struct ShapeResult {
  OpShape shape;
  bool measured = false;
  std::string skipped_because;     // when not measured
  ProfileEntry entry;              // when measured
};

// Measures every shape and upserts the results into `profile` (whose machine identity the caller
// sets). Shapes the runner cannot execute are reported as skipped, not fatal.
std::vector<ShapeResult> tune(const std::vector<OpShape>& shapes, const topo::Machine& m, OpRunner& runner,
                              const TuneOptions& opts, Profile& profile);

// The matrix ops of one decoder layer plus the LM head, for prefill (M = prefill_rows) and decode
// (M = 1): what `ckjit tune --model` measures once the GGUF metadata gives these sizes.
struct DecoderDims {
  int64_t hidden = 0, ffn = 0, heads = 0, kv_heads = 0, head_dim = 0, vocab = 0;
  TensorType wtype = TensorType::Q4_K;
};
std::vector<OpShape> decoder_op_shapes(const DecoderDims& d, int64_t prefill_rows);

double median(std::vector<double> v);

}  // namespace ckjit::planner
