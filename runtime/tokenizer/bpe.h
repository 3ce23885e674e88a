// BPE merging by rank over byte-level symbols (spec/tokenizer.md §5), as llama.cpp does it: a queue of
// adjacent pairs ordered by (merge rank, left position); stale pairs are skipped.
//
// Every text that can appear as a symbol (vocab entries, both sides and the result of every merge) is
// interned once at load, so merging works on integer ids: a merge is a map (left id, right id) ->
// (rank, result id). Ids below the vocab size are token ids; texts that are not tokens get ids above.
// Both maps are flat open-addressing tables: loading 150k tokens and merges must stay well under 0.3 s.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ckjit::tok {

class BpeModel {
 public:
  // tokens: byte-level token texts (index = id); merges: "left right" in priority order.
  BpeModel(const std::vector<std::string>& tokens, const std::vector<std::string>& merges);

  // Token id of a byte-level text, or -1 (the last id wins when a text repeats, like llama.cpp).
  int32_t token_id(std::string_view text) const;

  // Appends the token ids of one pre-tokenized piece given as raw bytes.
  void encode_piece(std::string_view bytes, std::vector<int32_t>& out) const;

  size_t merge_count() const { return n_merges_; }

 private:
  struct Merge {
    uint64_t key;    // pair_key(left, right); kEmptyKey = free slot
    int32_t rank;
    int32_t result;  // symbol id of left+right
  };
  static constexpr uint64_t kEmptyKey = ~uint64_t(0);
  static uint64_t pair_key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }

  std::string_view text_of(int32_t sym) const {
    return std::string_view(arena_).substr(sym_offset_[sym], sym_offset_[sym + 1] - sym_offset_[sym]);
  }
  size_t symbol_slot(std::string_view text) const;  // slot holding text, or the free slot for it
  int32_t symbol_id(std::string_view text) const;
  int32_t intern(std::string_view text);
  void grow_symbols();
  const Merge* find_merge(int32_t l, int32_t r) const;
  void append_fallback(std::string_view bytes, std::vector<int32_t>& out) const;

  int32_t n_vocab_ = 0;
  std::string arena_;                  // texts of all symbols, back to back
  std::vector<uint32_t> sym_offset_;   // symbol id -> start in arena_ (one extra end entry)
  std::vector<int32_t> sym_slots_;     // hash table of symbol ids, -1 = free
  std::vector<Merge> merge_slots_;     // hash table of merges
  size_t n_merges_ = 0;
  int32_t byte_symbol_[256];           // symbol id of each byte's byte-level char, -1 if unknown
};

}  // namespace ckjit::tok
