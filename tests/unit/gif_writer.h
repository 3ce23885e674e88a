// A GIF writer for tests: 8-bit palette images (a grey ramp by default), LZW codes kept at 9 bits
// by a clear code before each run of 250 literals (valid GIF, no compression worth the name).
// Frames after the first let tests check that decoders take the first.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace gif_test {

inline void le16(std::string& out, int v) {
  out += char(v & 0xff);
  out += char((v >> 8) & 0xff);
}

// One image block of w x h palette indices.
inline void frame(std::string& out, int w, int h, const std::vector<uint8_t>& index) {
  out += char(0x2c);  // image descriptor
  le16(out, 0), le16(out, 0), le16(out, w), le16(out, h);
  out += char(0);     // no local palette, not interlaced
  out += char(8);     // LZW minimum code size
  std::string data;
  uint32_t acc = 0;
  int bits = 0;
  auto code = [&](int c) {
    acc |= uint32_t(c) << bits, bits += 9;
    while (bits >= 8) data += char(acc & 0xff), acc >>= 8, bits -= 8;
  };
  const int clear = 256, end = 257;
  for (size_t i = 0; i < index.size(); ++i) {
    if (i % 250 == 0) code(clear);
    code(index[i]);
  }
  code(end);
  if (bits > 0) data += char(acc & 0xff);
  for (size_t i = 0; i < data.size(); i += 255) {  // sub-blocks of at most 255 bytes
    const size_t n = std::min<size_t>(255, data.size() - i);
    out += char(n);
    out += data.substr(i, n);
  }
  out += char(0);  // block terminator
}

// A GIF89a whose global palette is palette (256 RGB triples; empty: a grey ramp) and whose frames
// are the given index images, all w x h.
inline std::string make_gif(int w, int h, const std::vector<std::vector<uint8_t>>& frames, std::vector<uint8_t> palette = {}) {
  if (palette.empty())
    for (int i = 0; i < 256; ++i) palette.insert(palette.end(), {uint8_t(i), uint8_t(i), uint8_t(i)});
  std::string out = "GIF89a";
  le16(out, w), le16(out, h);
  out += char(0xf7);  // a global palette of 256 entries, 8 bits per primary
  out += char(0), out += char(0);
  out.append(palette.begin(), palette.end());
  for (const auto& f : frames) frame(out, w, h, f);
  out += char(0x3b);  // trailer
  return out;
}

}  // namespace gif_test
