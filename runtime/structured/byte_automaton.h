#pragma once
// Byte-level automata for structured output: an NFA built from Thompson fragments (what the JSON
// Schema compiler emits) and the DFA made from it by subset construction, over byte classes, with
// every state that cannot reach an accepting one removed — so "the bytes so far are a live prefix"
// is one table walk, and a token is allowed exactly when its bytes keep the DFA alive.
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace ckjit::structured {

// The size limits below are divided by 16 in a fuzzing build (oss-fuzz's macro): the same code paths,
// with the inputs that reach a limit 16 times cheaper, so a campaign runs many more of them.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
inline constexpr int kLimitShift = 4;
#else
inline constexpr int kLimitShift = 0;
#endif

constexpr int kMaxDfaStates = 60000 >> kLimitShift;  // a schema or grammar whose DFA would pass this is refused

class Nfa {
 public:
  struct Frag {
    int start, end;  // end: the one state the fragment leaves from (no edges yet)
  };
  static constexpr size_t kMaxStates = (size_t(1) << 20) >> kLimitShift;  // past it: Error (a hostile or huge schema or grammar)
  int add_state();
  void epsilon(int from, int to);
  void range(int from, uint8_t lo, uint8_t hi, int to);

  // Fragment builders. Each returns a fresh fragment; the ones they take are consumed (linked in).
  Frag empty();
  Frag bytes(std::string_view s);  // the literal byte string
  Frag ranges(const std::vector<std::pair<uint8_t, uint8_t>>& rs);  // one byte in any of the ranges
  Frag seq(Frag a, Frag b);
  Frag alt(const std::vector<Frag>& options);
  Frag optional(Frag a);
  Frag star(Frag a);  // zero or more; a must not accept the empty string through a path back to its start
  // Copies of a made by make() (a fresh fragment per call), between lo and hi times (hi < 0: no bound).
  template <class Make>
  Frag repeat(Make make, int lo, int hi) {
    Frag out = empty();
    for (int i = 0; i < lo; ++i) out = seq(out, make());
    if (hi < 0) return seq(out, star(make()));
    // The optional copies nest (a(b(c)?)?)? so every count from lo to hi has one path.
    Frag tail = empty();
    for (int i = lo; i < hi; ++i) tail = optional(seq(make(), tail));
    return seq(out, tail);
  }

  int n_states() const { return int(edges_.size()); }
  struct Edge {
    uint8_t lo, hi;
    int to;
  };
  const std::vector<Edge>& edges(int s) const { return edges_[size_t(s)]; }
  const std::vector<int>& epsilons(int s) const { return eps_[size_t(s)]; }

 private:
  std::vector<std::vector<Edge>> edges_;
  std::vector<std::vector<int>> eps_;
};

// A DFA over byte classes. State 0 is the start; kDead is the rejecting sink (never stored).
class Dfa {
 public:
  static constexpr int32_t kDead = -1;
  // Subset construction from nfa's `start` to its accepting state `accept`. Error (invalid_argument)
  // when the DFA would have more than max_states states (the schema is too large for this compiler).
  static Dfa from_nfa(const Nfa& nfa, Nfa::Frag whole, int max_states);

  int32_t next(int32_t state, uint8_t byte) const { return table_[size_t(state) * n_classes_ + class_of_[byte]]; }
  int32_t walk(int32_t state, std::string_view bytes) const {
    for (char c : bytes) {
      state = next(state, uint8_t(c));
      if (state == kDead) return kDead;
    }
    return state;
  }
  bool accepting(int32_t state) const { return accepting_[size_t(state)] != 0; }
  // Whether any byte leads on from the state (an accepting state without one must end here).
  bool has_next(int32_t state) const { return has_next_[size_t(state)] != 0; }
  int32_t n_states() const { return int32_t(accepting_.size()); }
  int n_classes() const { return n_classes_; }

 private:
  int n_classes_ = 0;
  uint8_t class_of_[256] = {};
  std::vector<int32_t> table_;  // n_states x n_classes
  std::vector<uint8_t> accepting_, has_next_;
};

}  // namespace ckjit::structured
