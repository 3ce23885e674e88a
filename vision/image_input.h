#pragma once
// From image files to projector rows, for the CLI and the library alike: decode + validate +
// preprocess for this tower (errors name the image), and the rows each image will take in the prompt (known before the tower runs, so a prompt that
// cannot fit the context fails before any encoding).
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/image/preprocess.h"
#include "vision/vision_model.h"

namespace ckjit::vision {

struct PreparedImage {
  std::string name;             // path or caller's label, for messages
  int src_width = 0, src_height = 0;
  image::PixelsF32 pixels;      // the preprocessed canvas
  int64_t n_rows = 0;           // projector rows it will give (merged patches)
};

// Errors: unreadable, corrupt or truncated data, a header beyond the pixel limit, an image with a
// side below 2 pixels, a token budget that cannot be met — each naming `name`.
PreparedImage prepare_image(const std::string& path, const image::PreprocessParams& p);
PreparedImage prepare_image(std::span<const uint8_t> bytes, const std::string& name, const image::PreprocessParams& p);

}  // namespace ckjit::vision
