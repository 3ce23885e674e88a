#pragma once
// A GIF's first frame from memory with Debian's giflib, composed on the logical screen to 8-bit RGB
// exactly as stb_image composed it (llama.cpp's mtmd decodes with stb, so the model sees the same
// pixels): the screen starts black; the frame's pixels are drawn unless they are the transparent
// index (those stay black); the pixels outside the frame take the background colour when its index
// is above 0, with its red and blue swapped, as stb writes it. Only the records up to the first frame
// are read, so the work is bounded by the file and the screen. giflib's errors become a ckjit::Error
// naming the image.
#include <cstdint>
#include <span>
#include <string>

#include "runtime/image/image.h"

namespace ckjit::image::gif {

struct Info {
  int width = 0, height = 0;  // the logical screen
};
// The screen descriptor as giflib reads it; Error naming `name` when it cannot.
Info info(std::span<const uint8_t> bytes, const std::string& name);

// The first frame on the screen in RGB; the screen's size is checked against `limits` before any pixel
// is decoded.
Rgb8 decode_rgb(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits);

}  // namespace ckjit::image::gif
