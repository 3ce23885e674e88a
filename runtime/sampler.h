#pragma once
// Token sampling with llama.cpp's parameter names and chain order: logit bias -> penalties
// (repetition, frequency, presence) -> top-k -> top-p -> min-p -> temperature -> draw. temp <= 0 is
// greedy (argmax after bias and penalties, ties to the lowest id). Buffers are sized once for the
// vocabulary: sampling allocates nothing per token.
#include <cstdint>
#include <random>
#include <span>
#include <utility>
#include <vector>

namespace ckjit {

struct SamplerParams {
  float temp = 0.0f;            // <= 0: greedy
  int32_t top_k = 40;           // <= 0: off
  float top_p = 0.95f;          // >= 1: off
  float min_p = 0.05f;          // <= 0: off
  float repeat_penalty = 1.0f;  // 1: off
  int32_t repeat_last_n = 64;   // how many recent tokens the penalties look at
  float frequency_penalty = 0.0f;  // subtracted per occurrence in that window (0: off)
  float presence_penalty = 0.0f;   // subtracted once for a token in that window (0: off)
  std::vector<std::pair<int32_t, float>> logit_bias;  // (token id, added to its logit)
  uint64_t seed = 0;
};

struct Candidate {
  int32_t id;
  float logit;
  float p;  // probability after the last softmax
};

// The chain's steps on a candidate list (exposed for tests). Each keeps at least one candidate.
namespace sampling {
// llama.cpp's penalties, for every distinct id in `recent` seen c times: logit > 0: logit / repeat,
// else logit * repeat; then logit -= c * frequency + presence.
void penalties(std::span<float> logits, std::span<const int32_t> recent, float repeat, float frequency = 0.0f,
               float presence = 0.0f);
// Sorts by logit (descending, ties by id) and keeps the k best.
void top_k(std::vector<Candidate>& c, int32_t k);
// Softmax over c (sorted descending) into p.
void softmax(std::vector<Candidate>& c);
// Keeps the shortest sorted prefix whose probability mass reaches p.
void top_p(std::vector<Candidate>& c, float p);
// Keeps candidates whose probability is at least min_p times the largest.
void min_p(std::vector<Candidate>& c, float min_p);
int32_t argmax(std::span<const float> logits);
}  // namespace sampling

class Sampler {
 public:
  Sampler(const SamplerParams& params, int32_t n_vocab);
  // Picks the next token from raw logits (n_vocab floats; not modified). allowed: a bitset over
  // the vocabulary (structured output); the others are never picked.
  int32_t sample(const float* logits, const uint64_t* allowed = nullptr);
  // Records a token of the sequence (prompt or generated) for the repetition penalty.
  void accept(int32_t id);
  const SamplerParams& params() const { return params_; }

 private:
  SamplerParams params_;
  int32_t n_vocab_;
  std::vector<float> work_;
  std::vector<Candidate> cand_;
  std::vector<int32_t> recent_;  // ring of the last repeat_last_n tokens
  std::vector<int32_t> recent_view_;
  size_t recent_next_ = 0;
  std::mt19937_64 rng_;
};

}  // namespace ckjit
