#pragma once
// PNG from memory with Debian's libpng (OSS-Fuzz runs it daily), to 8-bit RGB with the same bytes
// stb_image gave (llama.cpp's mtmd decodes with stb, so the model sees the same pixels): 16-bit
// samples keep their high byte, palettes and 1/2/4-bit grey are expanded, grey becomes r = g = b,
// alpha (an alpha channel or tRNS) is dropped, not composited, and no gamma is applied. libpng's
// errors become a ckjit::Error naming the image (a longjmp out of libpng, never an abort).
#include <cstdint>
#include <span>
#include <string>

#include "runtime/image/image.h"

namespace ckjit::image::png {

struct Info {
  int width = 0, height = 0, channels = 0;  // channels as stored: 1 grey, 2 grey + alpha, 3 RGB or palette, 4 RGBA
};
// IHDR as libpng reads it (its own checks included); Error naming `name` when it cannot.
Info info(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits);

// The image in RGB; the header's size is checked against `limits` before a row is decoded.
Rgb8 decode_rgb(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits);

}  // namespace ckjit::image::png
