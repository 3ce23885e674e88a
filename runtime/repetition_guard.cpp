#include "runtime/repetition_guard.h"

#include <algorithm>

namespace ckjit {

RepetitionGuard::RepetitionGuard(int repeats, int min_span)
    : repeats_(repeats), min_span_(min_span), ring_(kMaxUnit + 1, -1), match_(kMaxUnit + 1, 0) {}

bool RepetitionGuard::push(int32_t id) {
  const int64_t size = int64_t(ring_.size());
  ring_[size_t(n_ % size)] = id;
  unit_ = 0;
  bool loop = false;
  for (int p = 1; p <= kMaxUnit; ++p) {
    if (n_ < p) {
      match_[size_t(p)] = 0;
      continue;
    }
    match_[size_t(p)] = ring_[size_t((n_ - p) % size)] == id ? match_[size_t(p)] + 1 : 0;
    // The last p + match tokens have period p: the unit occurs (p + match) / p times.
    const int64_t span = p + int64_t(match_[size_t(p)]);
    if (!loop && repeats_ > 0 && span >= int64_t(p) * repeats_ && span >= min_span_) loop = true, unit_ = p;
  }
  ++n_;
  return loop;
}

}  // namespace ckjit
