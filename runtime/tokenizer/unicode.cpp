#include "runtime/tokenizer/unicode.h"

#include <memory>

namespace ckjit::tok {
namespace {

// One byte per code point (1.1 MB), expanded once from the generated ranges: O(1) lookups in the
// pre-tokenizer's inner loop.
struct FlagTable {
  std::unique_ptr<uint8_t[]> flags{new uint8_t[kMaxCodepoint + 1]};
  std::unique_ptr<CodepointCategory[]> category{new CodepointCategory[kMaxCodepoint + 1]};
  FlagTable() {
    for (size_t i = 0; i < kCategoryRangeCount; ++i) {
      const uint32_t begin = kCategoryRanges[i].start;
      const uint32_t end = i + 1 < kCategoryRangeCount ? kCategoryRanges[i + 1].start : kMaxCodepoint + 1;
      const CodepointCategory c = kCategoryRanges[i].category;
      uint8_t bits = CodepointFlags::kOtherCategory;
      if (c == CodepointCategory::Undefined) bits = CodepointFlags::kUndefined;
      if (c == CodepointCategory::Number) bits = CodepointFlags::kNumber;
      if (c == CodepointCategory::Letter) bits = CodepointFlags::kLetter;
      for (uint32_t cp = begin; cp < end; ++cp) {
        flags[cp] = bits;
        category[cp] = c;
      }
    }
    for (size_t i = 0; i < kWhiteSpaceCount; ++i) flags[kWhiteSpace[i]] |= CodepointFlags::kWhitespace;
  }
};

const FlagTable& table() {
  static const FlagTable t;
  return t;
}

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

}  // namespace

CodepointFlags codepoint_flags(uint32_t cp) {
  // Above U+10FFFF llama.cpp reports UNDEFINED (never reached here: the decoder maps such values to FFFD).
  if (cp > kMaxCodepoint) return CodepointFlags{CodepointFlags::kUndefined};
  return CodepointFlags{table().flags[cp]};
}

CodepointCategory codepoint_category(uint32_t cp) {
  return cp > kMaxCodepoint ? CodepointCategory::Undefined : table().category[cp];
}

std::vector<uint32_t> decode_utf8_lenient(std::string_view text) {
  std::vector<uint32_t> out;
  out.reserve(text.size());
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char b = s[i];
    size_t len = 0;
    uint32_t cp = 0;
    if (b < 0x80) { len = 1; cp = b; }
    else if ((b & 0xE0) == 0xC0) { len = 2; cp = b & 0x1F; }
    else if ((b & 0xF0) == 0xE0) { len = 3; cp = b & 0x0F; }
    else if ((b & 0xF8) == 0xF0) { len = 4; cp = b & 0x07; }
    // 0x80..0xBF (stray continuation) and 0xF8..0xFF: len stays 0 -> invalid
    bool ok = len > 0 && i + len <= n;
    for (size_t k = 1; ok && k < len; ++k) {
      if (!is_continuation(s[i + k])) ok = false;
      else cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (!ok) {
      out.push_back(kReplacementChar);
      i += 1;
      continue;
    }
    out.push_back(cp > kMaxCodepoint ? kReplacementChar : cp);
    i += len;
  }
  return out;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | ((cp >> 18) & 0x07)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_valid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  for (size_t i = 0; i < n;) {
    const unsigned char b = s[i];
    size_t len;
    uint32_t cp, min;
    if (b < 0x80) { i += 1; continue; }
    if ((b & 0xE0) == 0xC0) { len = 2; cp = b & 0x1F; min = 0x80; }
    else if ((b & 0xF0) == 0xE0) { len = 3; cp = b & 0x0F; min = 0x800; }
    else if ((b & 0xF8) == 0xF0) { len = 4; cp = b & 0x07; min = 0x10000; }
    else return false;
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if (!is_continuation(s[i + k])) return false;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > kMaxCodepoint || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

}  // namespace ckjit::tok
