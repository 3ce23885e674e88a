// libFuzzer target for image files: decode (JPEG through libjpeg-turbo, PNG through libpng, GIF through
// giflib, BMP through stb, validated; TIFF, every page, through libtiff; WebP through libwebp) and Qwen3-VL
// preprocessing at a small token budget. Any input must give pixels or a ckjit::Error; any other
// exception, crash or sanitizer report is a bug.
#include <cstddef>
#include <cstdint>

#include "runtime/error.h"
#include "runtime/image/image.h"
#include "runtime/image/preprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    ckjit::image::DecodeLimits limits;
    limits.max_pixels = 1 << 22;  // keep one input's work small; the limit check itself is fuzzed too
    const ckjit::image::Rgb8 img = ckjit::image::decode({data, size}, "fuzz input", limits);
    ckjit::image::PreprocessParams p;
    p.min_tokens = 4, p.max_tokens = 64;
    const ckjit::image::PixelsF32 px = ckjit::image::preprocess(img, p);
    if (px.width % p.factor() || px.height % p.factor() || px.rgb.size() != size_t(px.width) * px.height * 3) __builtin_trap();
    // A TIFF's later pages (a few: each is held to the limits already).
    const int pages = ckjit::image::read_header({data, size}, "fuzz input", limits).pages;
    for (int page = 1; page < pages && page < 4; ++page) {
      const ckjit::image::Rgb8 more = ckjit::image::decode_page({data, size}, "fuzz input", page, limits);
      if (more.pixels.size() != size_t(more.width) * size_t(more.height) * 3) __builtin_trap();
    }
  } catch (const ckjit::Error&) {
  }
  return 0;
}
