#include "runtime/image/exif.h"

namespace ckjit::image {

int exif_orientation(std::span<const uint8_t> b) {
  if (b.size() < 4 || b[0] != 0xFF || b[1] != 0xD8) return 1;
  size_t i = 2;
  while (i + 4 <= b.size() && b[i] == 0xFF) {
    const uint8_t marker = b[i + 1];
    if (marker == 0xDA || marker == 0xD9) break;  // the scan (or the end): no EXIF before it
    const size_t len = size_t(b[i + 2]) << 8 | b[i + 3];
    if (len < 2 || i + 2 + len > b.size()) break;
    const size_t seg = i + 4, end = i + 2 + len;
    if (marker == 0xE1 && end - seg >= 14 && b[seg] == 'E' && b[seg + 1] == 'x' && b[seg + 2] == 'i' && b[seg + 3] == 'f' &&
        b[seg + 4] == 0 && b[seg + 5] == 0) {
      const size_t t = seg + 6;  // the TIFF header
      const bool le = b[t] == 'I' && b[t + 1] == 'I';
      if (!le && !(b[t] == 'M' && b[t + 1] == 'M')) return 1;
      auto u16 = [&](size_t at) -> uint32_t { return le ? b[at] | b[at + 1] << 8 : b[at] << 8 | b[at + 1]; };
      auto u32 = [&](size_t at) -> uint32_t {
        return le ? uint32_t(b[at]) | uint32_t(b[at + 1]) << 8 | uint32_t(b[at + 2]) << 16 | uint32_t(b[at + 3]) << 24
                  : uint32_t(b[at]) << 24 | uint32_t(b[at + 1]) << 16 | uint32_t(b[at + 2]) << 8 | uint32_t(b[at + 3]);
      };
      const uint64_t ifd = t + uint64_t(u32(t + 4));
      if (ifd + 2 > end) return 1;
      const uint32_t n = u16(size_t(ifd));
      for (uint32_t k = 0; k < n; ++k) {
        const uint64_t e = ifd + 2 + uint64_t(k) * 12;
        if (e + 12 > end) return 1;
        if (u16(size_t(e)) == 0x0112) {
          const uint32_t v = u16(size_t(e) + 8);
          return v >= 1 && v <= 8 ? int(v) : 1;
        }
      }
      return 1;
    }
    i = end;
  }
  return 1;
}

Rgb8 apply_orientation(const Rgb8& in, int o) {
  if (o < 2 || o > 8) return in;
  const int w = in.width, h = in.height;
  Rgb8 out;
  out.width = orientation_swaps_sides(o) ? h : w;
  out.height = orientation_swaps_sides(o) ? w : h;
  out.pixels.resize(in.pixels.size());
  // For each upright pixel (x, y), the stored pixel it comes from (EXIF 2.3, tag 0x0112).
  for (int y = 0; y < out.height; ++y)
    for (int x = 0; x < out.width; ++x) {
      int sx = x, sy = y;
      switch (o) {
        case 2: sx = w - 1 - x; break;                 // mirrored
        case 3: sx = w - 1 - x, sy = h - 1 - y; break; // turned 180
        case 4: sy = h - 1 - y; break;                 // mirrored vertically
        case 5: sx = y, sy = x; break;                 // transposed
        case 6: sx = y, sy = h - 1 - x; break;         // turned 90 clockwise to view
        case 7: sx = w - 1 - y, sy = h - 1 - x; break; // transversed
        case 8: sx = w - 1 - y, sy = x; break;         // turned 90 counter-clockwise to view
      }
      const size_t from = (size_t(sy) * size_t(w) + size_t(sx)) * 3, to = (size_t(y) * size_t(out.width) + size_t(x)) * 3;
      for (int c = 0; c < 3; ++c) out.pixels[to + size_t(c)] = in.pixels[from + size_t(c)];
    }
  return out;
}

}  // namespace ckjit::image
