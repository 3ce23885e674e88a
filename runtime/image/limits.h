#pragma once
// The size checks every decoder makes on the header its library reports, before any pixel is
// decoded, so that every format refuses an oversized image with the same message.
#include <cstdint>
#include <string>

#include "runtime/image/image.h"

namespace ckjit::image {

bool too_big(int64_t w, int64_t h, const DecodeLimits& limits);
[[noreturn]] void refuse_size(const std::string& name, int64_t w, int64_t h, const DecodeLimits& limits);
// Error naming `name` for an image without pixels or one over `limits`.
void check_pixels(const std::string& name, int64_t w, int64_t h, const DecodeLimits& limits);

}  // namespace ckjit::image
