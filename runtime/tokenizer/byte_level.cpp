#include "runtime/tokenizer/byte_level.h"

#include <array>

#include "runtime/tokenizer/unicode.h"

namespace ckjit::tok {
namespace {

bool maps_to_itself(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

struct Maps {
  std::array<uint32_t, 256> to_cp{};
  std::array<int16_t, 0x144> to_byte{};  // every mapped code point is < U+0144
  std::array<std::string, 256> utf8;
  Maps() {
    to_byte.fill(-1);
    uint32_t next = 0x100;
    for (int b = 0; b < 256; ++b) to_cp[b] = maps_to_itself(b) ? b : next++;
    for (int b = 0; b < 256; ++b) {
      to_byte[to_cp[b]] = static_cast<int16_t>(b);
      append_utf8(utf8[b], to_cp[b]);
    }
  }
};

const Maps& maps() {
  static const Maps m;
  return m;
}

}  // namespace

uint32_t byte_to_codepoint(uint8_t b) { return maps().to_cp[b]; }

std::optional<uint8_t> codepoint_to_byte(uint32_t cp) {
  if (cp >= maps().to_byte.size() || maps().to_byte[cp] < 0) return std::nullopt;
  return static_cast<uint8_t>(maps().to_byte[cp]);
}

void append_byte_level(std::string& out, uint8_t b) { out += maps().utf8[b]; }

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) append_byte_level(out, static_cast<uint8_t>(c));
  return out;
}

}  // namespace ckjit::tok
