// Byte-level BPE tokenizer for Qwen2/Qwen3 vocabularies, reproducing llama.cpp's token ids
// (spec/tokenizer.md): special/added tokens are cut out of the text first (longest first), every other
// fragment is pre-tokenized with the Qwen2 rules, byte-level encoded and merged by BPE rank.
// Built from the plain vocab data a GGUF stores (tokenizer.ggml.*), independent of any file format.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/bpe.h"

namespace ckjit::tok {

// tokenizer.ggml.token_type values.
enum class TokenType : int32_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };

// What a GGUF's tokenizer.ggml.* keys hold.
struct TokenizerVocab {
  std::string model = "gpt2";             // tokenizer.ggml.model
  std::string pre = "qwen2";              // tokenizer.ggml.pre
  std::vector<std::string> tokens;        // byte-level encoded texts; index = id
  std::vector<int32_t> token_types;       // TokenType per token (empty: all Normal)
  std::vector<std::string> merges;        // "left right", priority order
  int32_t bos_id = -1, eos_id = -1;       // -1: none
  bool add_bos = false, add_eos = false;  // tokenizer.ggml.add_{bos,eos}_token
};

class Tokenizer {
 public:
  // Throws ckjit::Error for an unsupported model/pre-tokenizer or inconsistent data.
  explicit Tokenizer(const TokenizerVocab& vocab);
  Tokenizer(Tokenizer&&) = default;
  Tokenizer& operator=(Tokenizer&&) = default;

  // Token ids of `text` (any bytes; invalid UTF-8 never fails). parse_special: also match CONTROL
  // tokens in the text (USER_DEFINED ones always are). add_special: BOS/EOS if the vocab says so.
  std::vector<int32_t> encode(std::string_view text, bool add_special = false, bool parse_special = false) const;

  // The bytes of one token (may be a partial UTF-8 sequence). CONTROL/UNKNOWN tokens give their text
  // only if `special`; UNUSED give nothing. Throws ckjit::Error for an id out of range.
  std::string token_to_piece(int32_t id, bool special = false) const;
  std::string decode(std::span<const int32_t> ids, bool special = false) const;

  int32_t n_tokens() const { return static_cast<int32_t>(texts_.size()); }
  const std::string& token_text(int32_t id) const { return texts_.at(id); }
  TokenType token_type(int32_t id) const { return types_.at(id); }
  int32_t find_token(std::string_view text) const;  // exact token text -> id, or -1
  int32_t bos_id() const { return bos_id_; }
  int32_t eos_id() const { return eos_id_; }
  // End-of-generation tokens, as llama.cpp derives them (EOS plus known end-of-turn/FIM texts).
  // token_type() reports CONTROL for tokens llama.cpp promotes by text (see special_by_text.h).
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const { return eog_ids_; }

 private:
  void encode_fragment(std::string_view text, std::vector<int32_t>& out) const;

  std::vector<std::string> texts_;
  std::vector<TokenType> types_;
  BpeModel bpe_;
  std::vector<int32_t> specials_;  // CONTROL/USER_DEFINED/UNKNOWN ids, longest text first
  std::vector<int32_t> eog_ids_;
  int32_t bos_id_ = -1, eos_id_ = -1;
  bool add_bos_ = false, add_eos_ = false;
};

}  // namespace ckjit::tok
