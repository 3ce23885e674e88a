#include "vision/image_input.h"

#include "runtime/error.h"
#include "runtime/image/image.h"

namespace ckjit::vision {
namespace {

PreparedImage finish(image::Rgb8 rgb, const std::string& name, const image::PreprocessParams& p) {
  if (rgb.width < 2 || rgb.height < 2)
    throw Error(name + ": the image is " + std::to_string(rgb.width) + " x " + std::to_string(rgb.height) +
                " pixels, too small to read (at least 2 x 2)");
  PreparedImage out;
  out.name = name;
  out.src_width = rgb.width, out.src_height = rgb.height;
  try {
    out.pixels = image::preprocess(rgb, p);
  } catch (const Error& e) {
    throw Error(name + ": " + e.what());
  }
  out.n_rows = out.pixels.plan.n_tokens(p.factor());
  return out;
}

}  // namespace

PreparedImage prepare_image(const std::string& path, const image::PreprocessParams& p) {
  return finish(image::load(path), path, p);
}

PreparedImage prepare_image(std::span<const uint8_t> bytes, const std::string& name, const image::PreprocessParams& p) {
  return finish(image::decode(bytes, name), name, p);
}

}  // namespace ckjit::vision
