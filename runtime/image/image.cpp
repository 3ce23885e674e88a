#include "runtime/image/image.h"

#include <stb_image.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>

#include "runtime/error.h"
#include "runtime/image/jpeg_check.h"
#include "runtime/image/png_check.h"

namespace ckjit::image {

Format sniff_format(std::span<const uint8_t> b) {
  static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (b.size() >= 8 && std::memcmp(b.data(), png, 8) == 0) return Format::Png;
  if (b.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return Format::Jpeg;
  if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') return Format::Bmp;
  return Format::Unknown;
}

namespace {

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
uint16_t be16(const uint8_t* p) { return uint16_t(p[0] << 8 | p[1]); }
int32_t le32(const uint8_t* p) { return int32_t(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24); }

// The size the header claims, read here so that a huge claim is named as such (stb refuses it
// with a generic message); false when the header is too short to say.
bool header_size(std::span<const uint8_t> b, Format f, int64_t& w, int64_t& h) {
  if (f == Format::Png && b.size() >= 24) {
    w = be32(b.data() + 16), h = be32(b.data() + 20);
    return true;
  }
  if (f == Format::Bmp && b.size() >= 26) {
    w = le32(b.data() + 18), h = le32(b.data() + 22);
    if (h < 0) h = -int64_t(h);  // top-down rows
    return true;
  }
  if (f == Format::Jpeg) {  // the first SOFn segment
    size_t i = 2;
    while (i + 9 <= b.size() && b[i] == 0xff) {
      const uint8_t m = b[i + 1];
      if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
        h = be16(b.data() + i + 5), w = be16(b.data() + i + 7);
        return true;
      }
      i += 2 + be16(b.data() + i + 2);
    }
  }
  return false;
}

// stb's reason for a failure; it quotes raw bytes of the file (an unknown PNG chunk's type), which
// are shown as '?' unless printable ASCII, so no message carries a hostile file's control bytes.
std::string stb_reason() {
  std::string r = stbi_failure_reason() ? stbi_failure_reason() : "unknown";
  for (char& c : r)
    if (c < 0x20 || c > 0x7e) c = '?';
  return r;
}

}  // namespace

Header read_header(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits) {
  if (bytes.empty()) throw Error(name + ": empty image file");
  const Format format = sniff_format(bytes);
  if (format == Format::Unknown) throw Error(name + ": not a PNG, JPEG or BMP image");
  auto too_big = [&](int64_t w, int64_t h) {
    return w > limits.max_side || h > limits.max_side || w * h > limits.max_pixels;
  };
  auto refuse = [&](int64_t w, int64_t h) {
    throw Error(name + ": image header claims " + std::to_string(w) + " x " + std::to_string(h) +
                " pixels, above the limit of " + std::to_string(limits.max_pixels) + " pixels (" +
                std::to_string(limits.max_side) + " per side)");
  };
  int64_t cw = 0, ch = 0;
  if (header_size(bytes, format, cw, ch) && too_big(cw, ch)) refuse(cw, ch);
  if (bytes.size() > size_t(INT32_MAX)) throw Error(name + ": image file larger than 2 GiB");
  if (format == Format::Jpeg) check_jpeg_huffman_tables(bytes, name);
  if (format == Format::Png) check_png_chunk_lengths(bytes, name);
  int w = 0, h = 0, channels = 0;
  if (!stbi_info_from_memory(bytes.data(), int(bytes.size()), &w, &h, &channels))
    throw Error(name + ": unreadable image header (" + stb_reason() + ")");
  if (w < 1 || h < 1) throw Error(name + ": image has no pixels (" + std::to_string(w) + " x " + std::to_string(h) + ")");
  if (too_big(w, h)) refuse(w, h);
  if (channels < 1 || channels > 4) throw Error(name + ": unsupported channel count " + std::to_string(channels));
  return Header{format, w, h, channels};
}

Rgb8 decode(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits) {
  const Header hd = read_header(bytes, name, limits);
  const int w = hd.width, h = hd.height;
  int dw = 0, dh = 0, dc = 0;
  std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(bytes.data(), int(bytes.size()), &dw, &dh, &dc, 3),
                                               stbi_image_free);
  if (!px) throw Error(name + ": corrupt or truncated image data (" + stb_reason() + ")");
  if (dw != w || dh != h) throw Error(name + ": decoded size differs from the header's");
  Rgb8 out;
  out.width = w;
  out.height = h;
  out.pixels.assign(px.get(), px.get() + size_t(w) * size_t(h) * 3);
  return out;
}

Rgb8 load(const std::string& path, const DecodeLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open image");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode(bytes, path, limits);
}

}  // namespace ckjit::image
