#include "runtime/structured/token_constraint.h"

#include <algorithm>
#include <numeric>

#include "runtime/error.h"
#include "runtime/tokenizer/tokenizer.h"

namespace ckjit::structured {

// Masks cached per DFA state before the cache is emptied (a mask of the 151k Qwen vocabulary is 19 KB).
constexpr size_t kMaxCachedMasks = 512;

TokenBytes::TokenBytes(const tok::Tokenizer& tok, int32_t n_vocab) : n_vocab_(n_vocab), bytes_(size_t(n_vocab)) {
  for (int32_t id = 0; id < std::min(n_vocab, tok.n_tokens()); ++id) {
    const tok::TokenType t = tok.token_type(id);
    // Text tokens only: control and added tokens never appear inside grammar-made text.
    if (t == tok::TokenType::Normal || t == tok::TokenType::Byte) bytes_[size_t(id)] = tok.token_to_piece(id);
  }
  for (int32_t id : tok.eog_ids())
    if (id >= 0 && id < n_vocab) eog_.push_back(id);
  // End-of-generation ids are allowed only where the text is complete, never for their bytes.
  for (int32_t id : eog_) bytes_[size_t(id)].clear();
  for (int32_t id = 0; id < n_vocab; ++id)
    if (!bytes_[size_t(id)].empty()) sorted_.push_back(id);
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
    return bytes_[size_t(a)] != bytes_[size_t(b)] ? bytes_[size_t(a)] < bytes_[size_t(b)] : a < b;
  });
  lcp_.assign(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string &p = bytes_[size_t(sorted_[i - 1])], &c = bytes_[size_t(sorted_[i])];
    const size_t n = std::min(p.size(), c.size());
    uint32_t l = 0;
    while (l < n && p[l] == c[l]) ++l;
    lcp_[i] = l;
  }
}

bool TokenBytes::is_eog(int32_t id) const { return std::find(eog_.begin(), eog_.end(), id) != eog_.end(); }

TokenConstraint::TokenConstraint(const Grammar& g) : g_(g) {
  if (!g_.dfa || !g_.vocab) throw Error("structured output: a grammar needs its automaton and the model's vocabulary");
}

bool TokenConstraint::allows(int32_t id) const {
  if (id < 0 || id >= g_.vocab->n_vocab()) return false;
  if (g_.vocab->is_eog(id)) return complete();
  const std::string& b = g_.vocab->bytes(id);
  return !b.empty() && g_.dfa->walk(state_, b) != Dfa::kDead;
}

void TokenConstraint::accept(int32_t id) {
  if (!allows(id))
    throw Error("structured output: token " + std::to_string(id) + " does not continue the " + g_.source + " grammar");
  if (g_.vocab->is_eog(id)) return;
  state_ = g_.dfa->walk(state_, g_.vocab->bytes(id));
}

const std::vector<uint64_t>& TokenConstraint::allowed() {
  auto it = masks_.find(state_);
  if (it != masks_.end()) return it->second;
  if (masks_.size() >= kMaxCachedMasks) masks_.clear();
  return masks_.emplace(state_, compute_mask(state_)).first->second;
}

std::vector<uint64_t> TokenConstraint::compute_mask(int32_t state) const {
  const TokenBytes& v = *g_.vocab;
  const Dfa& dfa = *g_.dfa;
  std::vector<uint64_t> mask(size_t(v.n_vocab() + 63) / 64, 0);
  auto set = [&](int32_t id) { mask[size_t(id) / 64] |= uint64_t(1) << (id % 64); };
  // at[d]: the DFA state after the first d bytes of the current token (valid up to `valid`).
  // dead_at: the prefix of that length is dead, so is every following token that shares it.
  std::vector<int32_t> at(1, state);
  size_t dead_at = SIZE_MAX;
  const std::vector<int32_t>& ids = v.sorted();
  for (size_t i = 0; i < ids.size(); ++i) {
    const std::string& b = v.bytes(ids[i]);
    size_t d = i == 0 ? 0 : v.lcp()[i];
    if (dead_at != SIZE_MAX && d >= dead_at) continue;
    dead_at = SIZE_MAX;
    if (at.size() < b.size() + 1) at.resize(b.size() + 1);
    int32_t s = at[d];
    for (; d < b.size(); ++d) {
      s = dfa.next(s, uint8_t(b[d]));
      if (s == Dfa::kDead) break;
      at[d + 1] = s;
    }
    if (s == Dfa::kDead) {
      dead_at = d + 1;  // bytes [0, d] are a dead prefix
      continue;
    }
    set(ids[i]);
  }
  if (dfa.accepting(state))
    for (int32_t id : v.eog_ids()) set(id);
  if (std::all_of(mask.begin(), mask.end(), [](uint64_t w) { return w == 0; }))
    throw Error("structured output: no token of the vocabulary continues the " + g_.source + " grammar here");
  return mask;
}

}  // namespace ckjit::structured
