#include "runtime/image/gif_check.h"

#include "runtime/error.h"

namespace ckjit::image {

void check_gif_first_frame(std::span<const uint8_t> b, const std::string& name) {
  size_t at = 13;  // "GIF8?a", the logical screen (width, height, flags, background, aspect)
  auto cut = [&](const char* where) { throw Error(name + ": GIF cut short (" + std::string(where) + ")"); };
  auto palette = [&](uint8_t flags) {
    if (flags & 0x80) at += size_t(3) << ((flags & 7) + 1);
  };
  // Data sub-blocks: a length byte, that many bytes, ..., a 0 length.
  auto sub_blocks = [&](const char* what) {
    for (;;) {
      if (at >= b.size()) cut(what);
      const size_t n = b[at++];
      if (n == 0) return;
      at += n;
    }
  };
  if (b.size() < 13) cut("the header");
  palette(b[10]);
  for (;;) {
    if (at >= b.size()) cut("before the first image");
    const uint8_t block = b[at++];
    if (block == 0x21) {  // an extension: its label, then sub-blocks
      ++at;
      sub_blocks("an extension");
    } else if (block == 0x2c) {  // the image descriptor, its palette, the LZW code size, the data
      if (at + 9 > b.size()) cut("the image descriptor");
      const uint8_t flags = b[at + 8];
      at += 9;
      palette(flags);
      if (at >= b.size()) cut("the image's palette");
      const uint8_t code_size = b[at++];
      if (code_size < 2 || code_size > 8) throw Error(name + ": GIF image with LZW code size " + std::to_string(code_size) + " (2 to 8 are valid)");
      sub_blocks("the first image's data");
      return;
    } else if (block == 0x3b) {
      throw Error(name + ": GIF without an image (its trailer comes first)");
    } else {
      throw Error(name + ": GIF with an unknown block 0x" + std::string(1, "0123456789abcdef"[block >> 4]) + "0123456789abcdef"[block & 15] +
                  " before the first image");
    }
  }
}

}  // namespace ckjit::image
