#include "runtime/tokenizer/bpe.h"

#include <queue>

#include "runtime/tokenizer/byte_level.h"

namespace ckjit::tok {

BpeModel::BpeModel(const std::vector<std::string>& tokens, const std::vector<std::string>& merges)
    : n_vocab_(static_cast<int32_t>(tokens.size())) {
  size_t total = 0;
  for (const auto& t : tokens) total += t.size();
  token_arena_.reserve(total);
  for (const auto& t : tokens) token_arena_ += t;
  symbols_.reserve(tokens.size() + merges.size() / 4);
  size_t offset = 0;
  for (int32_t id = 0; id < n_vocab_; ++id) {
    symbols_[std::string_view(token_arena_).substr(offset, tokens[id].size())] = id;  // last duplicate wins
    offset += tokens[id].size();
  }
  merges_.reserve(merges.size());
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const std::string& m = merges[rank];
    // llama.cpp splits at the first space after the first character; a line without one merges
    // nothing that can occur (both sides empty).
    const size_t sp = m.find(' ', 1);
    if (sp == std::string::npos) continue;
    const std::string_view left(m.data(), sp), right(m.data() + sp + 1, m.size() - sp - 1);
    const int32_t l = intern(left), r = intern(right);
    joined.assign(left).append(right);
    const int32_t result = intern(joined);
    merges_.try_emplace(pair_key(l, r), Merge{static_cast<int32_t>(rank), result});  // first rank wins
  }
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    append_byte_level(ch, static_cast<uint8_t>(b));
    byte_symbol_[b] = symbol_id(ch);
  }
}

int32_t BpeModel::intern(std::string_view text) {
  if (auto it = symbols_.find(text); it != symbols_.end()) return it->second;
  const auto id = static_cast<int32_t>(n_vocab_ + extra_texts_.size());
  const std::string& stored = extra_texts_.emplace_back(text);
  symbols_.emplace(stored, id);
  return id;
}

int32_t BpeModel::symbol_id(std::string_view text) const {
  auto it = symbols_.find(text);
  return it == symbols_.end() ? -1 : it->second;
}

int32_t BpeModel::token_id(std::string_view text) const {
  const int32_t id = symbol_id(text);
  return id < n_vocab_ ? id : -1;
}

void BpeModel::append_fallback(std::string_view bytes, std::vector<int32_t>& out) const {
  // llama.cpp: a final symbol that is not a token is emitted byte by byte of its byte-level text,
  // keeping only bytes that are themselves tokens (never happens with a complete byte-level vocab).
  const std::string text = byte_level_encode(bytes);
  for (char c : text) {
    const int32_t id = token_id(std::string_view(&c, 1));
    if (id >= 0) out.push_back(id);
  }
}

void BpeModel::encode_piece(std::string_view bytes, std::vector<int32_t>& out) const {
  struct Symbol {
    int32_t id;
    uint32_t start, len;  // byte range in `bytes`; len 0 = merged away
    int32_t prev, next;
  };
  struct Pair {
    int32_t rank, left, right, left_id, right_id;
    bool operator<(const Pair& o) const {  // std::priority_queue pops the largest: lowest rank, leftmost
      return rank != o.rank ? rank > o.rank : left > o.left;
    }
  };
  const auto n = static_cast<int32_t>(bytes.size());
  if (n == 0) return;
  if (n == 1) {  // fast path: one byte
    const int32_t id = byte_symbol_[static_cast<uint8_t>(bytes[0])];
    if (id >= 0 && id < n_vocab_) out.push_back(id);
    else append_fallback(bytes, out);
    return;
  }
  std::vector<Symbol> sym(n);
  for (int32_t i = 0; i < n; ++i)
    sym[i] = Symbol{byte_symbol_[static_cast<uint8_t>(bytes[i])], uint32_t(i), 1u, i - 1, i + 1 < n ? i + 1 : -1};

  std::priority_queue<Pair> queue;
  auto try_push = [&](int32_t l, int32_t r) {
    if (l < 0 || r < 0 || sym[l].id < 0 || sym[r].id < 0) return;
    auto it = merges_.find(pair_key(sym[l].id, sym[r].id));
    if (it != merges_.end()) queue.push(Pair{it->second.rank, l, r, sym[l].id, sym[r].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) try_push(i, i + 1);

  while (!queue.empty()) {
    const Pair p = queue.top();
    queue.pop();
    Symbol& L = sym[p.left];
    Symbol& R = sym[p.right];
    if (L.len == 0 || R.len == 0 || L.id != p.left_id || R.id != p.right_id) continue;  // stale
    L.id = merges_.find(pair_key(p.left_id, p.right_id))->second.result;
    L.len += R.len;
    R.len = 0;
    L.next = R.next;
    if (R.next >= 0) sym[R.next].prev = p.left;
    try_push(L.prev, p.left);
    try_push(p.left, L.next);
  }

  for (int32_t i = 0; i >= 0; i = sym[i].next) {
    const Symbol& s = sym[i];
    if (s.id >= 0 && s.id < n_vocab_) out.push_back(s.id);
    else append_fallback(bytes.substr(s.start, s.len), out);
  }
}

}  // namespace ckjit::tok
