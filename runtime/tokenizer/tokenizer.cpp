#include "runtime/tokenizer/tokenizer.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/pretokenize_qwen2.h"
#include "runtime/tokenizer/special_by_text.h"
#include "runtime/tokenizer/unicode.h"

namespace ckjit::tok {
namespace {

// tokenizer.ggml.pre values for which llama.cpp uses the Qwen2 regex.
bool is_qwen2_pre(std::string_view pre) {
  return pre == "qwen2" || pre == "deepseek-r1-qwen" || pre == "kormo" || pre == "f2llmv2" || pre == "megrez";
}

std::vector<std::string> checked_tokens(const TokenizerVocab& v) {
  if (v.model != "gpt2")
    throw Error("tokenizer: model '" + v.model + "' is not supported (only byte-level BPE, 'gpt2')");
  if (!is_qwen2_pre(v.pre)) throw Error("tokenizer: pre-tokenizer '" + v.pre + "' is not supported (need 'qwen2')");
  if (v.tokens.empty()) throw Error("tokenizer: the vocabulary is empty");
  if (v.tokens.size() > 0x7FFFFFFF) throw Error("tokenizer: the vocabulary is too large");
  if (!v.token_types.empty() && v.token_types.size() != v.tokens.size())
    throw Error("tokenizer: " + std::to_string(v.token_types.size()) + " token types for " +
                std::to_string(v.tokens.size()) + " tokens");
  const auto n = static_cast<int64_t>(v.tokens.size());
  for (auto [name, id] : {std::pair{"BOS", v.bos_id}, std::pair{"EOS", v.eos_id}})
    if (id < -1 || id >= n) throw Error(std::string("tokenizer: ") + name + " id " + std::to_string(id) + " out of range");
  if (v.add_bos && v.bos_id < 0) throw Error("tokenizer: add_bos is set but there is no BOS token");
  if (v.add_eos && v.eos_id < 0) throw Error("tokenizer: add_eos is set but there is no EOS token");
  std::vector<std::string> texts = v.tokens;
  for (size_t i = 0; i < texts.size(); ++i)  // llama.cpp renames empty entries
    if (texts[i].empty()) texts[i] = "[EMPTY_" + std::to_string(i) + "]";
  return texts;
}

}  // namespace

Tokenizer::Tokenizer(const TokenizerVocab& v)
    : texts_(checked_tokens(v)), bpe_(texts_, v.merges), bos_id_(v.bos_id), eos_id_(v.eos_id),
      add_bos_(v.add_bos), add_eos_(v.add_eos) {
  types_.resize(texts_.size(), TokenType::Normal);
  for (size_t i = 0; i < v.token_types.size(); ++i) {
    const int32_t t = v.token_types[i];
    // llama.cpp turns unknown type values into "undefined" attributes: such a token is neither
    // matched in text nor rendered; UNUSED behaves the same here.
    types_[i] = (t >= 1 && t <= 6) ? static_cast<TokenType>(t) : TokenType::Unused;
  }
  // llama.cpp's load-time fix-ups by token text (e.g. Qwen's ordinary "</s>" becomes CONTROL + EOG).
  const TextDetectedSpecials by_text = detect_specials_by_text([this](std::string_view t) { return find_token(t); });
  for (int32_t id : by_text.control) types_[id] = TokenType::Control;
  eog_ids_ = by_text.eog;
  for (int32_t id = 0; id < n_tokens(); ++id) {
    const TokenType t = types_[id];
    if (t == TokenType::Control || t == TokenType::UserDefined || t == TokenType::Unknown) specials_.push_back(id);
  }
  // Longest first; among equal lengths by id (llama.cpp's order there is unspecified, and only matters
  // for overlapping texts of equal length, which Qwen vocabularies do not have).
  std::stable_sort(specials_.begin(), specials_.end(),
                   [&](int32_t a, int32_t b) { return texts_[a].size() > texts_[b].size(); });
  if (eos_id_ >= 0) eog_ids_.push_back(eos_id_);
  std::sort(eog_ids_.begin(), eog_ids_.end());
  eog_ids_.erase(std::unique(eog_ids_.begin(), eog_ids_.end()), eog_ids_.end());
}

int32_t Tokenizer::find_token(std::string_view text) const { return bpe_.token_id(text); }

bool Tokenizer::is_eog(int32_t id) const { return std::binary_search(eog_ids_.begin(), eog_ids_.end(), id); }

void Tokenizer::encode_fragment(std::string_view text, std::vector<int32_t>& out) const {
  const std::vector<uint32_t> cps = decode_utf8_lenient(text);
  std::vector<size_t> lengths;
  split_qwen2(cps, lengths);
  // Pieces are re-encoded from code points: like llama.cpp, invalid bytes become EF BF BD and
  // lenient decodes (overlongs) come back in their shortest form.
  std::string piece;
  size_t at = 0;
  for (size_t len : lengths) {
    piece.clear();
    for (size_t k = 0; k < len; ++k) append_utf8(piece, cps[at + k]);
    at += len;
    bpe_.encode_piece(piece, out);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special, bool parse_special) const {
  // A fragment is either a matched special token (token >= 0) or a raw byte range of `text`.
  struct Fragment {
    int32_t token;
    size_t offset, length;
  };
  std::vector<Fragment> fragments;
  if (!text.empty()) fragments.push_back({-1, 0, text.size()});
  std::vector<Fragment> next;
  for (int32_t id : specials_) {
    if (!parse_special && types_[id] != TokenType::UserDefined) continue;
    const std::string& special = texts_[id];
    bool any = false;
    next.clear();
    for (const Fragment& f : fragments) {
      if (f.token >= 0) { next.push_back(f); continue; }
      const std::string_view raw = text.substr(f.offset, f.length);
      size_t from = 0;
      for (size_t hit; (hit = raw.find(special, from)) != std::string_view::npos; from = hit + special.size()) {
        if (hit > from) next.push_back({-1, f.offset + from, hit - from});
        next.push_back({id, 0, 0});
        any = true;
      }
      if (from < raw.size()) next.push_back({-1, f.offset + from, raw.size() - from});
    }
    if (any) fragments.swap(next);
  }

  std::vector<int32_t> out;
  out.reserve(text.size() / 3 + 4);
  if (add_special && add_bos_) out.push_back(bos_id_);
  for (const Fragment& f : fragments) {
    if (f.token >= 0) out.push_back(f.token);
    else encode_fragment(text.substr(f.offset, f.length), out);
  }
  if (add_special && add_eos_) out.push_back(eos_id_);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  if (id < 0 || id >= n_tokens()) throw Error("tokenizer: token id " + std::to_string(id) + " out of range");
  const std::string& text = texts_[id];
  switch (types_[id]) {
    case TokenType::Control:
    case TokenType::Unknown: return special ? text : std::string();
    case TokenType::UserDefined: return text;
    case TokenType::Unused: return {};
    case TokenType::Byte: {  // "<0xXX>"; anything else renders as nothing
      auto hex = [](char c) { return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1; };
      if (text.size() == 6 && text.starts_with("<0x") && text.back() == '>' && hex(text[3]) >= 0 && hex(text[4]) >= 0)
        return std::string(1, static_cast<char>(hex(text[3]) * 16 + hex(text[4])));
      return {};
    }
    case TokenType::Normal: break;
  }
  // Normal: undo the byte-level mapping. A code point that is not a byte code point cannot occur in
  // a byte-level vocab; llama.cpp then emits a "[UNK_BYTE_0x..]" marker, we keep its UTF-8.
  std::string out;
  for (uint32_t cp : decode_utf8_lenient(text)) {
    if (auto b = codepoint_to_byte(cp)) out.push_back(static_cast<char>(*b));
    else append_utf8(out, cp);
  }
  return out;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool special) const {
  std::string out;
  for (int32_t id : ids) out += token_to_piece(id, special);
  return out;
}

}  // namespace ckjit::tok
