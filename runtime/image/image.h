#pragma once
// Image decoding for the vision path, from a file or from memory, always to 8-bit RGB (grey and
// grey+alpha are expanded, alpha is dropped, as llama.cpp's mtmd loads images), each format through
// the library Debian ships and OSS-Fuzz runs: JPEG (libjpeg-turbo, runtime/image/jpeg_decoder.h),
// PNG (libpng, png_decoder.h) and GIF's first frame (giflib, gif_decoder.h), decoded to the bytes
// stb_image gave (PNG, GIF; JPEG within +-1 of stb's IDCT), TIFF (libtiff; every page), WebP (libwebp;
// an animation's first frame), and BMP (stb_image, Debian having no BMP library, its allocations
// capped). Everything is validated before pixels are decoded: the format by its signature, the
// dimensions and channel count from the header the library reports, a pixel limit against
// decompression bombs; truncated or corrupt data is an Error naming the image and the problem.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ckjit::image {

struct Rgb8 {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // height rows of width RGB triples
  uint8_t at(int x, int y, int c) const { return pixels[(size_t(y) * size_t(width) + size_t(x)) * 3 + size_t(c)]; }
};

struct DecodeLimits {
  int64_t max_pixels = int64_t(1) << 26;  // 67 M pixels (8192 x 8192): 192 MiB of RGB
  int max_side = 32768;
};

enum class Format { Png, Jpeg, Bmp, Gif, Tiff, Webp, Unknown };
// For messages: what read_header accepts.
inline constexpr const char* kReadFormats = "PNG, JPEG, BMP, GIF, TIFF and WebP";
// A TIFF with more pages is refused (a loop of directories is libtiff's to catch; this bounds the work).
inline constexpr size_t kMaxTiffPages = 10000;
Format sniff_format(std::span<const uint8_t> bytes);
// What a file that is none of those is, from its first bytes ("a TIFF image", "a WebP image", "a PDF
// document", "text", ...), for an error that names it; "" when nothing is recognised.
std::string describe_other_format(std::span<const uint8_t> bytes);

struct Header {
  Format format = Format::Unknown;
  int width = 0, height = 0, channels = 0;  // upright: a JPEG's EXIF orientation applied (runtime/image/exif.h)
  int orientation = 1;                      // EXIF orientation (1: as stored)
  int pages = 1;                            // a TIFF's pages (each checked against the limits); 1 for the others
};
// The format and size from the header alone (no pixel decoded): every check decode() makes before
// decoding (signature, the library's header, size limits). `name` stands for the image in error messages
// (a path, or "image 2 of the request").
Header read_header(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits = {});

// The first page (the only one but for a TIFF).
Rgb8 decode(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits = {});
// A 0-based page of a multi-page TIFF (ckjit ocr reads each as a page); page 0 for the other formats.
Rgb8 decode_page(std::span<const uint8_t> bytes, const std::string& name, int page, const DecodeLimits& limits = {});
Rgb8 load(const std::string& path, const DecodeLimits& limits = {});

}  // namespace ckjit::image
