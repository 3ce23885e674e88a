#pragma once
// JPEG from memory with Debian's libjpeg-turbo (the decoder OSS-Fuzz runs daily; SIMD IDCT and
// colour conversion): baseline, progressive and arithmetic-coded, grey / YCbCr / RGB / CMYK / YCCK,
// always to 8-bit RGB. Errors are ckjit::Error naming the image and libjpeg's reason (libjpeg's
// error_exit is turned into a longjmp, never an exit); warnings about corrupt data are tolerated as
// stb_image tolerated them, but data that ends before the image does is an error.
#include <cstdint>
#include <span>
#include <string>

#include "runtime/image/image.h"

namespace ckjit::image::jpeg {

struct Info {
  int width = 0, height = 0, channels = 0;  // channels: the frame's components (1, 3 or 4)
};
// The frame header (markers up to the first scan); Error naming `name` when libjpeg cannot read it.
Info info(std::span<const uint8_t> bytes, const std::string& name);

// The image as stored (no EXIF turn) in RGB. The header's size is checked against `limits` and
// libjpeg's working memory capped from it before a pixel is decoded. Grey is expanded to r = g = b;
// CMYK and YCCK (Adobe's inverted CMYK, what Photoshop writes) become r = c * k / 255, ..., as
// stb_image and so llama.cpp's mtmd convert them.
Rgb8 decode_rgb(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits);

}  // namespace ckjit::image::jpeg
