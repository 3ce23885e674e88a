#pragma once
// The EXIF orientation of a JPEG (tag 0x0112 of IFD0 in its APP1 "Exif" segment): phone photos are
// stored sideways with a tag that says how to turn them upright. 1 (as stored) when absent or unreadable.
#include <cstdint>
#include <span>

#include "runtime/image/image.h"

namespace ckjit::image {

int exif_orientation(std::span<const uint8_t> jpeg);
// Whether the orientation turns the image by 90 degrees (width and height swap): 5 to 8.
inline bool orientation_swaps_sides(int o) { return o >= 5 && o <= 8; }
// The stored pixels turned upright for orientation o (1..8; others leave them as they are).
Rgb8 apply_orientation(const Rgb8& stored, int o);

}  // namespace ckjit::image
