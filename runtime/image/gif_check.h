#pragma once
// Checks a GIF's block structure up to the end of its first image before stb_image sees it: stb
// reads past the end of a cut file as zero bytes and returns an image whose rest is blank, without
// an error. A file whose first image's data does not end (its terminator) within the bytes is
// refused here, as are unknown blocks and a trailer before any image.
#include <cstdint>
#include <span>
#include <string>

namespace ckjit::image {

// Error naming `name` when the first frame is cut short or the blocks before it are malformed.
void check_gif_first_frame(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace ckjit::image
