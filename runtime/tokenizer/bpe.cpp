#include "runtime/tokenizer/bpe.h"

#include <queue>

#include "runtime/tokenizer/byte_level.h"

namespace ckjit::tok {

namespace {

uint64_t hash_text(std::string_view s) {  // FNV-1a: token texts are short
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h ^ (h >> 29);
}

uint64_t hash_key(uint64_t k) { return (k * 0x9E3779B97F4A7C15ull) ^ (k >> 31); }

size_t pow2_at_least(size_t n) {
  size_t c = 16;
  while (c < n) c <<= 1;
  return c;
}

}  // namespace

BpeModel::BpeModel(const std::vector<std::string>& tokens, const std::vector<std::string>& merges)
    : n_vocab_(static_cast<int32_t>(tokens.size())) {
  size_t total = 0;
  for (const auto& t : tokens) total += t.size();
  arena_.reserve(total + total / 8);
  sym_offset_.reserve(tokens.size() + tokens.size() / 8 + 1);
  sym_slots_.assign(pow2_at_least(2 * (tokens.size() + tokens.size() / 8)), -1);
  sym_offset_.push_back(0);
  for (int32_t id = 0; id < n_vocab_; ++id) {
    arena_ += tokens[id];
    sym_offset_.push_back(static_cast<uint32_t>(arena_.size()));
    const size_t slot = symbol_slot(tokens[id]);
    sym_slots_[slot] = id;  // a repeated text points at its last id, like llama.cpp's token_to_id
  }

  merge_slots_.assign(pow2_at_least(2 * merges.size()), Merge{kEmptyKey, 0, 0});
  const size_t mask = merge_slots_.size() - 1;
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
    const uint64_t key = pair_key(l, r);
    size_t i = hash_key(key) & mask;
    while (merge_slots_[i].key != kEmptyKey && merge_slots_[i].key != key) i = (i + 1) & mask;
    if (merge_slots_[i].key == key) continue;  // a repeated merge keeps its first rank
    merge_slots_[i] = Merge{key, static_cast<int32_t>(rank), result};
    ++n_merges_;
  }
  for (int b = 0; b < 256; ++b) {
    std::string ch;
    append_byte_level(ch, static_cast<uint8_t>(b));
    byte_symbol_[b] = symbol_id(ch);
  }
}

size_t BpeModel::symbol_slot(std::string_view text) const {
  const size_t mask = sym_slots_.size() - 1;
  size_t i = hash_text(text) & mask;
  while (sym_slots_[i] >= 0 && text_of(sym_slots_[i]) != text) i = (i + 1) & mask;
  return i;
}

int32_t BpeModel::symbol_id(std::string_view text) const { return sym_slots_[symbol_slot(text)]; }

void BpeModel::grow_symbols() {
  sym_slots_.assign(sym_slots_.size() * 2, -1);
  const auto n = static_cast<int32_t>(sym_offset_.size() - 1);
  for (int32_t id = 0; id < n; ++id) {
    const size_t slot = symbol_slot(text_of(id));
    if (sym_slots_[slot] < 0 || id < n_vocab_) sym_slots_[slot] = id;
  }
}

int32_t BpeModel::intern(std::string_view text) {
  size_t slot = symbol_slot(text);
  if (sym_slots_[slot] >= 0) return sym_slots_[slot];
  const auto id = static_cast<int32_t>(sym_offset_.size() - 1);
  arena_.append(text);  // `text` never points into arena_ here: it is a merge line or `joined`
  sym_offset_.push_back(static_cast<uint32_t>(arena_.size()));
  sym_slots_[slot] = id;
  if (2 * sym_offset_.size() > sym_slots_.size()) grow_symbols();
  return id;
}

const BpeModel::Merge* BpeModel::find_merge(int32_t l, int32_t r) const {
  if (merge_slots_.empty()) return nullptr;
  const uint64_t key = pair_key(l, r);
  const size_t mask = merge_slots_.size() - 1;
  for (size_t i = hash_key(key) & mask;; i = (i + 1) & mask) {
    if (merge_slots_[i].key == key) return &merge_slots_[i];
    if (merge_slots_[i].key == kEmptyKey) return nullptr;
  }
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
    if (const Merge* m = find_merge(sym[l].id, sym[r].id)) queue.push(Pair{m->rank, l, r, sym[l].id, sym[r].id});
  };
  for (int32_t i = 0; i + 1 < n; ++i) try_push(i, i + 1);

  while (!queue.empty()) {
    const Pair p = queue.top();
    queue.pop();
    Symbol& L = sym[p.left];
    Symbol& R = sym[p.right];
    if (L.len == 0 || R.len == 0 || L.id != p.left_id || R.id != p.right_id) continue;  // stale
    L.id = find_merge(p.left_id, p.right_id)->result;
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
