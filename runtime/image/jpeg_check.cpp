#include "runtime/image/jpeg_check.h"

#include "runtime/error.h"

namespace ckjit::image {

void check_jpeg_huffman_tables(std::span<const uint8_t> b, const std::string& name) {
  const size_t n = b.size();
  auto standalone = [](uint8_t m) { return m == 0xd8 || m == 0x01 || (m >= 0xd0 && m <= 0xd7); };
  size_t i = 2;  // after SOI
  while (i + 1 < n) {
    if (b[i] != 0xff) return;  // not at a marker: stb reports the corruption
    const uint8_t m = b[i + 1];
    if (m == 0xff) { ++i; continue; }  // fill byte
    if (standalone(m)) { i += 2; continue; }
    if (m == 0xd9 || i + 4 > n) return;  // EOI, or too short for a length: stb's to judge
    const size_t len = size_t(b[i + 2]) << 8 | b[i + 3];
    if (len < 2 || i + 2 + len > n) return;
    if (m == 0xc4) {
      const size_t end = i + 2 + len;
      for (size_t p = i + 4; p < end;) {
        if (p + 17 > end) throw Error(name + ": corrupt JPEG: a Huffman table is cut short");
        size_t codes = 0;
        for (int k = 1; k <= 16; ++k) codes += b[p + k];
        if (codes > 256) throw Error(name + ": corrupt JPEG: a Huffman table lists " + std::to_string(codes) + " codes (at most 256)");
        p += 17 + codes;
        if (p > end) throw Error(name + ": corrupt JPEG: a Huffman table overruns its segment");
      }
    }
    i += 2 + len;
    if (m == 0xda)  // entropy-coded data until the next marker (0xff 0x00 is a stuffed byte, RSTn sits inside)
      while (i + 1 < n && !(b[i] == 0xff && b[i + 1] != 0x00 && !(b[i + 1] >= 0xd0 && b[i + 1] <= 0xd7))) ++i;
  }
}

}  // namespace ckjit::image
