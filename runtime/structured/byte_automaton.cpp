#include "runtime/structured/byte_automaton.h"

#include <algorithm>
#include <string>
#include <unordered_map>

#include "runtime/error.h"

namespace ckjit::structured {

int Nfa::add_state() {
  if (edges_.size() >= kMaxStates)
    throw Error("the schema or grammar is too large for structured output (more than " + std::to_string(kMaxStates) +
                    " automaton states before determinizing; fewer or smaller bounded repetitions)",
                ErrorKind::invalid_argument);
  edges_.emplace_back();
  eps_.emplace_back();
  return int(edges_.size()) - 1;
}

void Nfa::epsilon(int from, int to) { eps_[size_t(from)].push_back(to); }

void Nfa::range(int from, uint8_t lo, uint8_t hi, int to) { edges_[size_t(from)].push_back({lo, hi, to}); }

Nfa::Frag Nfa::empty() {
  const int s = add_state();
  return {s, s};
}

Nfa::Frag Nfa::bytes(std::string_view s) {
  Frag f = empty();
  for (char c : s) {
    const int next = add_state();
    range(f.end, uint8_t(c), uint8_t(c), next);
    f.end = next;
  }
  return f;
}

Nfa::Frag Nfa::ranges(const std::vector<std::pair<uint8_t, uint8_t>>& rs) {
  const int a = add_state(), b = add_state();
  for (const auto& [lo, hi] : rs) range(a, lo, hi, b);
  return {a, b};
}

Nfa::Frag Nfa::seq(Frag a, Frag b) {
  epsilon(a.end, b.start);
  return {a.start, b.end};
}

Nfa::Frag Nfa::alt(const std::vector<Frag>& options) {
  const int a = add_state(), b = add_state();
  for (const Frag& f : options) epsilon(a, f.start), epsilon(f.end, b);
  return {a, b};
}

Nfa::Frag Nfa::optional(Frag a) {
  const int s = add_state(), e = add_state();
  epsilon(s, a.start), epsilon(a.end, e), epsilon(s, e);
  return {s, e};
}

Nfa::Frag Nfa::star(Frag a) {
  const int s = add_state(), e = add_state();
  epsilon(s, a.start), epsilon(a.end, s), epsilon(s, e);
  return {s, e};
}

namespace {

constexpr size_t kMaxKeptNfaStates = (size_t(1) << 22) >> kLimitShift;  // summed over the DFA states' NFA sets (a hostile grammar fails in well under a second)

// The epsilon closure of set, in place and sorted (set is its own work list).
void close(const Nfa& nfa, std::vector<int>& set, std::vector<uint8_t>& seen) {
  for (int s : set) seen[size_t(s)] = 1;
  for (size_t i = 0; i < set.size(); ++i)
    for (int t : nfa.epsilons(set[i]))
      if (!seen[size_t(t)]) seen[size_t(t)] = 1, set.push_back(t);
  for (int s : set) seen[size_t(s)] = 0;
  std::sort(set.begin(), set.end());
}

// State sets as hash keys without copying them into strings.
struct SetHash {
  size_t operator()(const std::vector<int>& v) const {
    uint64_t h = 1469598103934665603ull;
    for (int x : v) h = (h ^ uint32_t(x)) * 1099511628211ull;
    return size_t(h);
  }
};

}  // namespace

Dfa Dfa::from_nfa(const Nfa& nfa, Nfa::Frag whole, int max_states) {
  Dfa d;
  // Byte classes: the bytes between consecutive edge boundaries behave alike in every state.
  std::vector<uint8_t> boundary(257, 0);
  boundary[0] = 1;
  for (int s = 0; s < nfa.n_states(); ++s)
    for (const Nfa::Edge& e : nfa.edges(s)) boundary[e.lo] = 1, boundary[size_t(e.hi) + 1] = 1;
  std::vector<uint8_t> first_byte;
  for (int b = 0; b < 256; ++b) {
    if (boundary[size_t(b)]) first_byte.push_back(uint8_t(b));
    d.class_of_[b] = uint8_t(first_byte.size() - 1);
  }
  d.n_classes_ = int(first_byte.size());

  std::vector<std::vector<int>> sets;
  std::unordered_map<std::vector<int>, int32_t, SetHash> ids;
  std::vector<uint8_t> seen(size_t(nfa.n_states()), 0);
  // The moves of a state on a class (before the closure) repeat much: each distinct one is closed once.
  std::unordered_map<std::vector<int>, int32_t, SetHash> by_moves;
  size_t kept = 0;
  auto intern = [&](const std::vector<int>& moves) -> int32_t {
    if (moves.empty()) return kDead;
    if (auto known = by_moves.find(moves); known != by_moves.end()) return known->second;
    std::vector<int> set = moves;
    close(nfa, set, seen);
    auto [it, fresh] = ids.emplace(set, int32_t(sets.size()));
    if (fresh) {
      // The closures are kept (twice): long chains of optional parts make them long, so their
      // total size is bounded as well as their count.
      kept += set.size();
      if (int(sets.size()) >= max_states || kept > kMaxKeptNfaStates)
        throw Error("the schema or grammar is too large for structured output (its automaton passes " + std::to_string(max_states) +
                        " states; fewer or smaller bounded repetitions, or less nesting)",
                    ErrorKind::invalid_argument);
      sets.push_back(std::move(set));
    }
    by_moves.emplace(moves, it->second);
    return it->second;
  };
  intern({whole.start});
  std::vector<int32_t> table;
  // Each edge's targets into the buckets of the classes it covers (edges cover few classes).
  std::vector<std::vector<int>> bucket(size_t(d.n_classes_));
  for (size_t i = 0; i < sets.size(); ++i) {
    for (int s : sets[i])
      for (const Nfa::Edge& e : nfa.edges(s))
        for (int c = d.class_of_[e.lo]; c <= d.class_of_[e.hi]; ++c) bucket[size_t(c)].push_back(e.to);
    for (int c = 0; c < d.n_classes_; ++c) {
      std::vector<int>& next = bucket[size_t(c)];
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
      table.push_back(intern(next));
      next.clear();
    }
  }
  const size_t n = sets.size(), nc = size_t(d.n_classes_);
  std::vector<uint8_t> accepting(n, 0);
  for (size_t i = 0; i < n; ++i) accepting[i] = std::binary_search(sets[i].begin(), sets[i].end(), whole.end);

  // Keep the states that can still reach an accepting one (a live prefix); the rest become kDead.
  std::vector<std::vector<int32_t>> preds(n);
  for (size_t i = 0; i < n; ++i)
    for (size_t c = 0; c < nc; ++c)
      if (table[i * nc + c] != kDead) preds[size_t(table[i * nc + c])].push_back(int32_t(i));
  std::vector<uint8_t> live(n, 0);
  std::vector<int32_t> todo;
  for (size_t i = 0; i < n; ++i)
    if (accepting[i]) live[i] = 1, todo.push_back(int32_t(i));
  while (!todo.empty()) {
    const int32_t s = todo.back();
    todo.pop_back();
    for (int32_t p : preds[size_t(s)])
      if (!live[size_t(p)]) live[size_t(p)] = 1, todo.push_back(p);
  }
  if (!live[0]) throw Error("the schema or grammar admits no text", ErrorKind::invalid_argument);
  std::vector<int32_t> renum(n, kDead);
  int32_t m = 0;
  for (size_t i = 0; i < n; ++i)
    if (live[i]) renum[i] = m++;
  d.table_.assign(size_t(m) * nc, kDead);
  d.accepting_.assign(size_t(m), 0);
  d.has_next_.assign(size_t(m), 0);
  for (size_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    const size_t r = size_t(renum[i]);
    d.accepting_[r] = accepting[i];
    for (size_t c = 0; c < nc; ++c) {
      const int32_t t = table[i * nc + c];
      const int32_t to = t == kDead ? kDead : renum[size_t(t)];
      d.table_[r * nc + c] = to;
      if (to != kDead) d.has_next_[r] = 1;
    }
  }
  return d;
}

}  // namespace ckjit::structured
