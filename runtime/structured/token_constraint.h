#pragma once
// Structured output at the token level: which tokens of the vocabulary keep a grammar's byte DFA
// alive from its current state. The vocabulary's byte strings are sorted once per model
// (TokenBytes) so that a state's mask is one walk of a sorted list: tokens that share a prefix
// share its DFA steps, and a dead prefix skips every token under it. Masks are cached per DFA
// state. The sampler checks the sampled token first and masks only when it is refused (as
// llama.cpp does): sampling p, then p restricted to the allowed set, draws exactly p conditioned
// on the allowed set.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/structured/byte_automaton.h"

namespace ckjit::tok {
class Tokenizer;
}

namespace ckjit::structured {

class TokenBytes {
 public:
  // n_vocab: the model's logits width (ids past the tokenizer's tokens are never allowed).
  TokenBytes(const tok::Tokenizer& tok, int32_t n_vocab);
  int32_t n_vocab() const { return n_vocab_; }
  const std::string& bytes(int32_t id) const { return bytes_[size_t(id)]; }  // "" for control, unused, ...
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_; }
  // Ids with non-empty bytes in byte order, and each one's common prefix length with the one before.
  const std::vector<int32_t>& sorted() const { return sorted_; }
  const std::vector<uint32_t>& lcp() const { return lcp_; }

 private:
  int32_t n_vocab_;
  std::vector<std::string> bytes_;
  std::vector<int32_t> sorted_;
  std::vector<uint32_t> lcp_;
  std::vector<int32_t> eog_;
};

// What a generation is constrained by: the DFA and the model's vocabulary bytes.
struct Grammar {
  std::shared_ptr<const Dfa> dfa;
  std::shared_ptr<const TokenBytes> vocab;
  std::string source;  // what it was made from ("json_schema", "json_object", a file name), for messages
};

// One generation's position in a Grammar.
class TokenConstraint {
 public:
  explicit TokenConstraint(const Grammar& g);
  // Whether id may come next: its bytes keep the DFA alive, or it ends generation where the
  // text is complete.
  bool allows(int32_t id) const;
  // Moves past id (an end-of-generation id leaves the state as it is). Error if not allowed.
  void accept(int32_t id);
  // The allowed ids as a bitset over n_vocab (bit id % 64 of word id / 64). Never empty.
  const std::vector<uint64_t>& allowed();
  bool complete() const { return g_.dfa->accepting(state_); }  // the text so far is a whole value
  int32_t state() const { return state_; }

 private:
  std::vector<uint64_t> compute_mask(int32_t state) const;
  Grammar g_;
  int32_t state_ = 0;
  std::unordered_map<int32_t, std::vector<uint64_t>> masks_;
};

}  // namespace ckjit::structured
