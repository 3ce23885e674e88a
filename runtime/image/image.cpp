#include "runtime/image/image.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string_view>

#include "runtime/error.h"
#include "runtime/image/exif.h"
#include "runtime/image/gif_decoder.h"
#include "runtime/image/jpeg_decoder.h"
#include "runtime/image/limits.h"
#include "runtime/image/png_decoder.h"
#include "runtime/image/stb_decoder.h"
#include "runtime/image/tiff_decoder.h"
#include "runtime/image/webp_decoder.h"

namespace ckjit::image {

Format sniff_format(std::span<const uint8_t> b) {
  static const uint8_t png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (b.size() >= 8 && std::memcmp(b.data(), png, 8) == 0) return Format::Png;
  if (b.size() >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff) return Format::Jpeg;
  if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') return Format::Bmp;
  if (b.size() >= 6 && (std::memcmp(b.data(), "GIF87a", 6) == 0 || std::memcmp(b.data(), "GIF89a", 6) == 0)) return Format::Gif;
  // TIFF and BigTIFF, either byte order.
  if (b.size() >= 4 && ((b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0) ||
                        (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43))))
    return Format::Tiff;
  if (b.size() >= 12 && std::memcmp(b.data(), "RIFF", 4) == 0 && std::memcmp(b.data() + 8, "WEBP", 4) == 0) return Format::Webp;
  return Format::Unknown;
}

std::string describe_other_format(std::span<const uint8_t> b) {
  auto starts = [&](std::string_view magic, size_t at = 0) {
    return b.size() >= at + magic.size() && std::memcmp(b.data() + at, magic.data(), magic.size()) == 0;
  };
  using namespace std::string_view_literals;  // magics with NUL bytes keep their length
  if (starts("ftypheic", 4) || starts("ftypheix", 4) || starts("ftypmif1", 4)) return "a HEIC image";
  if (starts("ftypavif", 4)) return "an AVIF image";
  if (starts("\0\0\0\x0cjP  "sv)) return "a JPEG 2000 image";
  if (starts("%PDF-")) return "a PDF document";
  if (starts("PK\x03\x04")) return "a ZIP archive (or an Office document)";
  if (starts("\x1f\x8b")) return "a gzip file";
  if (starts("<svg") || starts("<?xml")) return "an SVG or XML file";
  if (b.empty()) return "";
  const size_t n = std::min<size_t>(b.size(), 512);
  for (size_t i = 0; i < n; ++i)
    if (b[i] < 0x09 || (b[i] > 0x0d && b[i] < 0x20)) return "";
  return "text";
}

namespace {

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }
int32_t le32(const uint8_t* p) { return int32_t(uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24); }

// The size a PNG, BMP or GIF header claims at its fixed offsets, read here so that a huge claim is
// refused with the same message in every format before a library parses more; false when the
// header is too short to say, and for JPEG, whose size only libjpeg's header read finds.
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
  if (f == Format::Gif && b.size() >= 10) {  // the logical screen
    w = int64_t(b[6]) | int64_t(b[7]) << 8, h = int64_t(b[8]) | int64_t(b[9]) << 8;
    return true;
  }
  return false;  // JPEG: its size comes from libjpeg's header read (no marker walk of ours)
}

}  // namespace

namespace {

// A TIFF's pages, the page's name in errors ("NAME page 2" for all but a one-page file).
std::string page_name(const std::string& name, int page, int pages) {
  return pages > 1 ? name + " page " + std::to_string(page + 1) : name;
}

// TIFF and WebP go through their own libraries; every check happens before pixels are decoded.
Header read_library_header(std::span<const uint8_t> bytes, const std::string& name, Format format, const DecodeLimits& limits) {
  if (format == Format::Webp) {
    const webp::Info in = webp::info(bytes, name);
    check_pixels(name, in.width, in.height, limits);
    return Header{format, in.width, in.height, in.alpha ? 4 : 3, 1, 1};
  }
  const std::vector<tiff::PageSize> pages = tiff::page_sizes(bytes, name, kMaxTiffPages);
  for (size_t p = 0; p < pages.size(); ++p) check_pixels(page_name(name, int(p), int(pages.size())), pages[p].width, pages[p].height, limits);
  return Header{format, int(pages[0].width), int(pages[0].height), 3, 1, int(pages.size())};
}

// PNG, JPEG and GIF: the header as their libraries read it; BMP: as stb_image reads it.
void library_info(std::span<const uint8_t> bytes, const std::string& name, Format format, const DecodeLimits& limits, int& w, int& h,
                  int& channels) {
  if (format == Format::Jpeg) {
    const jpeg::Info in = jpeg::info(bytes, name);
    w = in.width, h = in.height, channels = in.channels;
  } else if (format == Format::Png) {
    const png::Info in = png::info(bytes, name, limits);
    w = in.width, h = in.height, channels = in.channels;
  } else if (format == Format::Gif) {
    const gif::Info in = gif::info(bytes, name);
    w = in.width, h = in.height, channels = 3;
  } else {
    stb::Info in;
    if (!stb::info(bytes, in)) throw Error(name + ": unreadable image header (" + stb::failure_reason() + ")");
    w = in.width, h = in.height, channels = in.channels;
  }
}

// BMP through stb_image, every allocation capped.
Rgb8 decode_bmp(std::span<const uint8_t> bytes, const std::string& name, int w, int h) {
  const size_t cap = max_decode_alloc(w, h, bytes.size());
  const stb::Pixels px = stb::decode_rgb(bytes, cap);
  if (px.over_cap)
    throw Error(name + ": image data expands beyond what a " + std::to_string(w) + " x " + std::to_string(h) +
                " image needs (one buffer over " + std::to_string(cap >> 20) + " MiB): refused as a decompression bomb");
  if (!px.rgb) throw Error(name + ": corrupt or truncated image data (" + stb::failure_reason() + ")");
  if (px.width != w || px.height != h) throw Error(name + ": decoded size differs from the header's");
  Rgb8 out;
  out.width = w, out.height = h;
  out.pixels.assign(px.rgb.get(), px.rgb.get() + size_t(w) * size_t(h) * 3);
  return out;
}

}  // namespace

Header read_header(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits) {
  if (bytes.empty()) throw Error(name + ": empty image file");
  const Format format = sniff_format(bytes);
  if (format == Format::Unknown) {
    const std::string what = describe_other_format(bytes);
    throw Error(name + ": " + (what.empty() ? "not an image ckjit reads" : what + ", which ckjit does not read") + " (it reads " +
                kReadFormats + "; convert the file, e.g. to PNG)");
  }
  if (bytes.size() > size_t(INT32_MAX)) throw Error(name + ": image file larger than 2 GiB");
  if (format == Format::Tiff || format == Format::Webp) return read_library_header(bytes, name, format, limits);
  int64_t cw = 0, ch = 0;
  if (header_size(bytes, format, cw, ch) && too_big(cw, ch, limits)) refuse_size(name, cw, ch, limits);
  int w = 0, h = 0, channels = 0;
  library_info(bytes, name, format, limits, w, h, channels);
  check_pixels(name, w, h, limits);
  if (channels < 1 || channels > 4) throw Error(name + ": unsupported channel count " + std::to_string(channels));
  const int o = format == Format::Jpeg ? exif_orientation(bytes) : 1;
  return orientation_swaps_sides(o) ? Header{format, h, w, channels, o, 1} : Header{format, w, h, channels, o, 1};
}

Rgb8 decode_page(std::span<const uint8_t> bytes, const std::string& name, int page, const DecodeLimits& limits) {
  const Header hd = read_header(bytes, name, limits);
  if (page < 0 || page >= hd.pages)
    throw Error(name + ": no page " + std::to_string(page + 1) + " (the image has " + std::to_string(hd.pages) + ")");
  Rgb8 out;
  if (hd.format == Format::Tiff) {
    const std::vector<tiff::PageSize> sizes = tiff::page_sizes(bytes, name, kMaxTiffPages);
    out.width = int(sizes[size_t(page)].width), out.height = int(sizes[size_t(page)].height);
    out.pixels = tiff::decode_rgb(bytes, page_name(name, page, hd.pages), page, max_decode_alloc(out.width, out.height, bytes.size()));
    return out;
  }
  if (hd.format == Format::Webp) {
    out.width = hd.width, out.height = hd.height;
    out.pixels = webp::decode_rgb(bytes, name, webp::info(bytes, name));
    return out;
  }
  const bool swapped = orientation_swaps_sides(hd.orientation);
  const int w = swapped ? hd.height : hd.width, h = swapped ? hd.width : hd.height;  // as stored
  out = hd.format == Format::Jpeg  ? jpeg::decode_rgb(bytes, name, limits)
        : hd.format == Format::Png ? png::decode_rgb(bytes, name, limits)
        : hd.format == Format::Gif ? gif::decode_rgb(bytes, name, limits)
                                   : decode_bmp(bytes, name, w, h);
  if (out.width != w || out.height != h) throw Error(name + ": decoded size differs from the header's");
  // Phone photos stored sideways come out upright (llama.cpp's stb path does not turn them).
  return hd.orientation == 1 ? out : apply_orientation(out, hd.orientation);
}

Rgb8 decode(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits) {
  return decode_page(bytes, name, 0, limits);
}

Rgb8 load(const std::string& path, const DecodeLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open image");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return decode(bytes, path, limits);
}

}  // namespace ckjit::image
