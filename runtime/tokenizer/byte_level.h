// GPT-2 byte-level encoding (spec/tokenizer.md §4): every byte maps to one printable code point, so
// vocab entries and merges are plain text. 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF map to themselves; the
// other 68 bytes, in increasing order, to U+0100..U+0143.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ckjit::tok {

uint32_t byte_to_codepoint(uint8_t b);
// The byte a code point stands for, or nullopt if it is not one of the 256 byte code points.
std::optional<uint8_t> codepoint_to_byte(uint32_t cp);

// Byte-level text (UTF-8 of the mapped code points) of raw bytes.
std::string byte_level_encode(std::string_view bytes);
void append_byte_level(std::string& out, uint8_t b);

}  // namespace ckjit::tok
