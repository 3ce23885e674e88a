#include "runtime/image/limits.h"

#include "runtime/error.h"

namespace ckjit::image {

bool too_big(int64_t w, int64_t h, const DecodeLimits& limits) {
  return w > limits.max_side || h > limits.max_side || w * h > limits.max_pixels;
}

void refuse_size(const std::string& name, int64_t w, int64_t h, const DecodeLimits& limits) {
  throw Error(name + ": image header claims " + std::to_string(w) + " x " + std::to_string(h) + " pixels, above the limit of " +
              std::to_string(limits.max_pixels) + " pixels (" + std::to_string(limits.max_side) + " per side)");
}

size_t max_decode_alloc(int64_t w, int64_t h, size_t file) {
  return size_t(16 * (w + 64) * (h + 64)) + 2 * file + (size_t(16) << 20);
}

void check_pixels(const std::string& name, int64_t w, int64_t h, const DecodeLimits& limits) {
  if (w < 1 || h < 1) throw Error(name + ": image has no pixels (" + std::to_string(w) + " x " + std::to_string(h) + ")");
  if (too_big(w, h, limits)) refuse_size(name, w, h, limits);
}

}  // namespace ckjit::image
