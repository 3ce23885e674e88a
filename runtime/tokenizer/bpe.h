// BPE merging by rank over byte-level symbols (spec/tokenizer.md §5), as llama.cpp does it: a queue of
// adjacent pairs ordered by (merge rank, left position); stale pairs are skipped.
//
// Every text that can appear as a symbol (vocab entries, both sides and the result of every merge) is
// interned once at load, so merging works on integer ids: a merge is a map (left id, right id) ->
// (rank, result id). Ids below the vocab size are token ids; texts that are not tokens get ids above.
#pragma once
#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ckjit::tok {

class BpeModel {
 public:
  // tokens: byte-level token texts (index = id); merges: "left right" in priority order.
  BpeModel(const std::vector<std::string>& tokens, const std::vector<std::string>& merges);
  BpeModel(BpeModel&&) = default;  // the maps hold views into storage that a move keeps in place
  BpeModel& operator=(BpeModel&&) = default;
  BpeModel(const BpeModel&) = delete;
  BpeModel& operator=(const BpeModel&) = delete;

  // Token id of a byte-level text, or -1 (the last id wins when a text repeats, like llama.cpp).
  int32_t token_id(std::string_view text) const;

  // Appends the token ids of one pre-tokenized piece given as raw bytes.
  void encode_piece(std::string_view bytes, std::vector<int32_t>& out) const;

  size_t merge_count() const { return merges_.size(); }

 private:
  struct Merge {
    int32_t rank;
    int32_t result;  // symbol id of left+right
  };
  int32_t intern(std::string_view text);
  int32_t symbol_id(std::string_view text) const;
  static uint64_t pair_key(int32_t l, int32_t r) { return (uint64_t(uint32_t(l)) << 32) | uint32_t(r); }
  void append_fallback(std::string_view bytes, std::vector<int32_t>& out) const;

  int32_t n_vocab_ = 0;
  std::string token_arena_;                                 // all token texts, back to back
  std::deque<std::string> extra_texts_;                     // non-token symbol texts (stable addresses)
  std::unordered_map<std::string_view, int32_t> symbols_;  // text -> symbol id (views into the above)
  std::unordered_map<uint64_t, Merge> merges_;
  int32_t byte_symbol_[256];  // symbol id of each byte's byte-level char, -1 if unknown
};

}  // namespace ckjit::tok
