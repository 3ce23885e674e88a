#include "tools/serve/token_logprobs.h"

#include <algorithm>
#include <cmath>

namespace ckjit::serve {

namespace {

std::string piece_of(const ckjit_model* model, int32_t token) {
  char buf[256];
  size_t n = 0;
  if (ckjit_token_to_piece(model, token, 1, buf, sizeof buf, &n) == CKJIT_OK) return std::string(buf, n);
  std::string big(n, '\0');  // longer than 256 bytes: ask again with room
  if (n > 0 && ckjit_token_to_piece(model, token, 1, big.data(), big.size(), &n) == CKJIT_OK) return big.substr(0, n);
  return {};
}

}  // namespace

TokenLogprob token_logprob(const ckjit_model* model, const float* logits, int32_t n_vocab, int32_t token, int top_n) {
  // log p(i) = l(i) - max - log(sum exp(l - max)), the sum in double (151,936 terms).
  float max = -INFINITY;
  for (int32_t i = 0; i < n_vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - max);
  const double log_z = double(max) + std::log(sum);
  auto logprob = [&](int32_t i) { return float(double(logits[i]) - log_z); };

  TokenLogprob out;
  out.chosen = {piece_of(model, token), logprob(token)};
  top_n = std::clamp(top_n, 0, n_vocab);
  if (top_n == 0) return out;
  // The top_n best ids by one pass with a small sorted list (top_n is at most 20).
  auto better = [&](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  std::vector<int32_t> best;
  best.reserve(size_t(top_n) + 1);
  for (int32_t i = 0; i < n_vocab; ++i) {
    if (int(best.size()) == top_n && !better(i, best.back())) continue;
    best.insert(std::upper_bound(best.begin(), best.end(), i, better), i);
    if (int(best.size()) > top_n) best.pop_back();
  }
  for (int32_t id : best) out.top.push_back({piece_of(model, id), logprob(id)});
  return out;
}

}  // namespace ckjit::serve
