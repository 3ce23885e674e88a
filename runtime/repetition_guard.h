#pragma once
// Detects a generation caught in a loop (a page that ends in thousands of copies of one line): the
// last tokens are one unit of at most kMaxUnit tokens repeated at least `repeats` times, spanning
// at least `min_span` tokens. O(kMaxUnit) per token, no allocation after construction.
#include <cstdint>
#include <vector>

namespace ckjit {

class RepetitionGuard {
 public:
  static constexpr int kMaxUnit = 64;
  // repeats <= 0: never fires.
  explicit RepetitionGuard(int repeats = 8, int min_span = 32);
  // Records the next token; true when the text now ends in a loop.
  bool push(int32_t id);
  // The repeating unit's length when push returned true (0 otherwise).
  int unit() const { return unit_; }

 private:
  int repeats_, min_span_;
  std::vector<int32_t> ring_;    // the last kMaxUnit + 1 tokens
  std::vector<int32_t> match_;   // match_[p]: how many latest tokens equal the token p before them
  int64_t n_ = 0;
  int unit_ = 0;
};

}  // namespace ckjit
