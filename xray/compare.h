#pragma once
// Checkpoint-by-checkpoint comparison of two runs (runtime/tap.h records), in the candidate's
// evaluation order. The metric at each checkpoint is the largest relative L2 distance over the
// rows both runs hold, ‖a − b‖ / ‖b‖ (b: the reference). The tolerance is evidence, never a
// guess: 0 (bit-identical) against ckjit's own scalar twins (the numerical contract), or the
// distance between two reference runs that should agree as well as the candidate does (llama.cpp
// batched vs one token per batch: its own envelope). A checkpoint without both is "not compared".
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/tap.h"

namespace ckjit::xray {

enum class Verdict { passed, failed, not_compared };
const char* verdict_name(Verdict v);

struct CheckpointResult {
  std::string name;
  Verdict verdict = Verdict::not_compared;
  std::string why;           // for not_compared: what was missing
  double distance = 0;       // max relative L2 over the common rows
  double max_abs = 0;        // largest |a - b|
  int64_t worst_row = -1;    // sequence position of the row with the largest distance
  int64_t rows = 0;          // rows compared
  bool bit_identical = false;
  double tolerance = 0;
  std::string tolerance_source;
  // Against the envelope's other run (llama.cpp one token per batch), when there is one: which of
  // llama.cpp's two orders the candidate follows.
  std::optional<double> other_distance;
  bool other_identical = false;
};

struct Distance {
  double rel = 0, max_abs = 0;
  int64_t worst_row = -1, rows = 0;
  bool identical = true;
};
// Over the rows both records hold; rows = 0 when they share none.
Distance distance(const TapRecord& a, const TapRecord& b);

// Tolerance per checkpoint: exact zero, or measured between two reference runs.
struct Tolerances {
  std::string source;  // "bit-identical (numerical contract)" or "llama.cpp batched vs one token per batch"
  bool exact = false;
  // The envelope: distance(envelope_b, envelope_a), envelope_a being the reference run itself.
  std::vector<TapRecord> envelope_a, envelope_b;
};

std::vector<CheckpointResult> compare_runs(const std::vector<TapRecord>& candidate, const std::vector<TapRecord>& reference,
                                           const Tolerances& tol);

// The first step (logits row) where the two runs rank the vocabulary differently.
struct RankingDisagreement {
  int64_t step = -1, position = -1;   // -1: none
  int top1_candidate = -1, top1_reference = -1;
  int k = 0;                           // the smallest top-k whose order differs (1: the argmax)
  int64_t steps_compared = 0;
};
RankingDisagreement first_ranking_disagreement(const TapRecord& cand_logits, const TapRecord& ref_logits, int max_k = 5);

}  // namespace ckjit::xray
