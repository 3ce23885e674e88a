#pragma once
// The size checks every decoder makes on the header its library reports, before any pixel is
// decoded, so that every format refuses an oversized image with the same message.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/image/image.h"

namespace ckjit::image {

bool too_big(int64_t w, int64_t h, const DecodeLimits& limits);
[[noreturn]] void refuse_size(const std::string& name, int64_t w, int64_t h, const DecodeLimits& limits);
// Error naming `name` for an image without pixels or one over `limits`.
void check_pixels(const std::string& name, int64_t w, int64_t h, const DecodeLimits& limits);
// The most a decoder may allocate (one buffer for stb and libtiff, the whole working memory for
// libjpeg) for a W x H image of `file` compressed bytes held by it: 16-bit RGBA rows, growth by
// doubling, and the compressed data, with room to spare. A legitimate file never comes near it; a
// decompression bomb does.
size_t max_decode_alloc(int64_t w, int64_t h, size_t file);

}  // namespace ckjit::image
