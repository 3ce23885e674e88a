#pragma once
// Step-by-step comparison of two logit trajectories (float32 [steps][n_vocab], the --dump-logits
// format of ckjit run and peer-cli): cosine per step, top-1 agreement wherever the reference's
// top-2 margin is clear, largest absolute difference. Used by `ckjit logits` and the parity tests.
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ckjit {

struct StepTop {
  int32_t top1 = 0;
  float margin = 0;  // logit(top1) - logit(top2)
};
StepTop step_top(std::span<const float> logits);
// The k largest (id, logit), descending; ties to the lower id.
std::vector<std::pair<int32_t, float>> top_k_logits(std::span<const float> logits, int k);
double cosine(std::span<const float> a, std::span<const float> b);

struct TrajectoryDiff {
  int64_t steps = 0;
  double cos_min = 1, cos_mean = 1;
  int64_t cos_min_step = 0;
  int64_t clear_steps = 0, clear_agree = 0;  // steps whose reference margin > threshold, and agreement there
  int64_t all_agree = 0;
  float max_abs = 0;
  std::vector<int64_t> disagreements;  // steps whose top-1 differs (any margin)
  // Per step: full-vocabulary cosine and max |a - b|, each side's top-1 and the reference's top-2 margin.
  std::vector<double> step_cos;
  std::vector<float> step_max_abs, step_margin_b;
  std::vector<int32_t> step_top1_a, step_top1_b;
};
// a: candidate, b: reference; rows of n_vocab; uses min(rows) steps.
TrajectoryDiff compare_trajectories(std::span<const float> a, std::span<const float> b, int64_t n_vocab,
                                    float margin_threshold);

std::vector<float> read_logits_file(const std::string& path, int64_t n_vocab);  // Error if not whole rows

}  // namespace ckjit
