// Code point classes and UTF-8 conversion with llama.cpp's exact semantics (including how it treats
// invalid input), for the byte-level BPE tokenizer.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tokenizer/unicode_tables.h"

namespace ckjit::tok {

inline constexpr uint32_t kMaxCodepoint = 0x10FFFF;
inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Class bits of one code point. Every code point <= 0x10FFFF has exactly one category bit set
// (unassigned ones get kUndefined), so `any()` is false only for "no code point" (end of segment).
struct CodepointFlags {
  enum : uint8_t { kUndefined = 1, kNumber = 2, kLetter = 4, kWhitespace = 8, kOtherCategory = 16 };
  uint8_t bits = 0;
  bool letter() const { return bits & kLetter; }
  bool number() const { return bits & kNumber; }
  bool whitespace() const { return bits & kWhitespace; }
  bool any() const { return bits != 0; }
};

CodepointFlags codepoint_flags(uint32_t cp);
CodepointCategory codepoint_category(uint32_t cp);

// Decodes UTF-8 the way llama.cpp's unicode_cpts_from_utf8 does: the lead byte alone decides the length
// (no overlong/surrogate checks); a lead byte that is a stray continuation byte or 0xF8..0xFF, or a
// sequence cut short or with a bad continuation byte, yields U+FFFD and consumes one byte. Lead bytes
// F4..F7 can decode to values above U+10FFFF: llama.cpp then throws when re-encoding them (its
// llama_tokenize fails); we return U+FFFD for such a value instead (same pre-tokenizer class: neither
// letter, number nor space), so the result equals llama.cpp's for the input with that sequence
// replaced by EF BF BD. Never throws.
std::vector<uint32_t> decode_utf8_lenient(std::string_view text);

// Appends the UTF-8 encoding of cp (cp <= 0x10FFFF; surrogates are encoded as-is, like llama.cpp).
void append_utf8(std::string& out, uint32_t cp);

// True if `text` is well-formed UTF-8 (no overlongs, surrogates or values above U+10FFFF).
bool is_valid_utf8(std::string_view text);

}  // namespace ckjit::tok
