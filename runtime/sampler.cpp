#include "runtime/sampler.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "runtime/error.h"

namespace ckjit {
namespace sampling {

void penalties(std::span<float> logits, std::span<const int32_t> recent, float repeat, float frequency, float presence) {
  if (repeat == 1.0f && frequency == 0.0f && presence == 0.0f) return;
  for (size_t i = 0; i < recent.size(); ++i) {
    const int32_t id = recent[i];
    if (id < 0 || size_t(id) >= logits.size()) continue;
    if (std::find(recent.begin(), recent.begin() + i, id) != recent.begin() + i) continue;  // once per id
    const auto seen = std::count(recent.begin() + i, recent.end(), id);
    float& l = logits[size_t(id)];
    l = l > 0.0f ? l / repeat : l * repeat;
    l -= float(seen) * frequency + presence;
  }
}

static bool better(const Candidate& a, const Candidate& b) { return a.logit > b.logit || (a.logit == b.logit && a.id < b.id); }

void top_k(std::vector<Candidate>& c, int32_t k) {
  if (k <= 0 || size_t(k) >= c.size()) {
    std::sort(c.begin(), c.end(), better);
    return;
  }
  std::partial_sort(c.begin(), c.begin() + k, c.end(), better);
  c.resize(size_t(k));
}

void softmax(std::vector<Candidate>& c) {
  if (c.empty()) return;
  const float mx = c.front().logit;
  double sum = 0.0;
  for (auto& x : c) sum += (x.p = std::exp(x.logit - mx));
  for (auto& x : c) x.p = float(x.p / sum);
}

void top_p(std::vector<Candidate>& c, float p) {
  if (p >= 1.0f || c.size() <= 1) return;
  softmax(c);
  double cum = 0.0;
  size_t keep = c.size();
  for (size_t i = 0; i < c.size(); ++i) {
    cum += c[i].p;
    if (cum >= p) {
      keep = i + 1;
      break;
    }
  }
  c.resize(std::max<size_t>(1, keep));
}

void min_p(std::vector<Candidate>& c, float mp) {
  if (mp <= 0.0f || c.size() <= 1) return;
  // p_i >= mp * p_max  <=>  logit_i >= logit_max + log(mp) (sorted: a prefix).
  const float cut = c.front().logit + std::log(mp);
  size_t keep = 1;
  while (keep < c.size() && c[keep].logit >= cut) ++keep;
  c.resize(keep);
}

int32_t argmax(std::span<const float> logits) {
  int32_t best = 0;
  for (size_t i = 1; i < logits.size(); ++i)
    if (logits[i] > logits[size_t(best)]) best = int32_t(i);
  return best;
}

}  // namespace sampling

Sampler::Sampler(const SamplerParams& params, int32_t n_vocab)
    : params_(params), n_vocab_(n_vocab), work_(size_t(n_vocab)), rng_(params.seed) {
  if (n_vocab <= 0) throw Error("sampler: empty vocabulary");
  if (params.repeat_penalty <= 0.0f) throw Error("$repeat_penalty must be positive", ErrorKind::invalid_argument);
  if (params.top_p <= 0.0f) throw Error("$top_p must be positive", ErrorKind::invalid_argument);
  if (params.min_p >= 1.0f) throw Error("$min_p must be below 1", ErrorKind::invalid_argument);
  if (!std::isfinite(params.frequency_penalty) || !std::isfinite(params.presence_penalty))
    throw Error("$frequency_penalty and $presence_penalty must be finite", ErrorKind::invalid_argument);
  for (const auto& [id, bias] : params.logit_bias) {
    if (id < 0 || id >= n_vocab)
      throw Error("$logit_bias names token " + std::to_string(id) + ", outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")",
                  ErrorKind::invalid_argument);
    if (std::isnan(bias) || bias == INFINITY) throw Error("$logit_bias of token " + std::to_string(id) + " is not a number below +inf",
                                                          ErrorKind::invalid_argument);
  }
  cand_.reserve(size_t(n_vocab));
  recent_.reserve(size_t(std::max(0, params.repeat_last_n)));
  recent_view_.reserve(recent_.capacity());
}

void Sampler::accept(int32_t id) {
  const size_t cap = size_t(std::max(0, params_.repeat_last_n));
  if (cap == 0) return;
  if (recent_.size() < cap) {
    recent_.push_back(id);
  } else {
    recent_[recent_next_] = id;
    recent_next_ = (recent_next_ + 1) % cap;
  }
}

int32_t Sampler::sample(const float* logits, const uint64_t* allowed) {
  std::copy(logits, logits + n_vocab_, work_.begin());
  for (const auto& [id, bias] : params_.logit_bias) work_[size_t(id)] += bias;
  auto is_allowed = [&](int32_t i) { return !allowed || (allowed[size_t(i) / 64] >> (i % 64) & 1); };
  if (allowed)
    for (int32_t i = 0; i < n_vocab_; ++i)
      if (!is_allowed(i)) work_[size_t(i)] = -INFINITY;
  sampling::penalties(work_, recent_, params_.repeat_penalty, params_.frequency_penalty, params_.presence_penalty);
  // Only finite logits are candidates (a bias or a mask of -inf removes a token); where none is
  // left, the lowest allowed id.
  auto fallback = [&] {
    for (int32_t i = 0; i < n_vocab_; ++i)
      if (is_allowed(i)) return i;
    return int32_t(0);
  };
  if (params_.temp <= 0.0f) {
    const int32_t best = sampling::argmax(work_);
    return std::isfinite(work_[size_t(best)]) || !allowed ? best : fallback();
  }
  cand_.clear();
  for (int32_t i = 0; i < n_vocab_; ++i)
    if (work_[size_t(i)] > -INFINITY) cand_.push_back({i, work_[size_t(i)], 0.0f});
  if (cand_.empty()) return fallback();
  sampling::top_k(cand_, params_.top_k);
  sampling::top_p(cand_, params_.top_p);
  sampling::min_p(cand_, params_.min_p);
  for (auto& c : cand_) c.logit /= params_.temp;
  sampling::softmax(cand_);
  const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
  double cum = 0.0;
  for (const auto& c : cand_) {
    cum += c.p;
    if (u < cum) return c.id;
  }
  return cand_.back().id;
}

}  // namespace ckjit
