#pragma once
// WebP from memory (Debian's libwebp): a still image (lossy or lossless) or an animation's first
// frame (libwebpdemux composes it on the canvas, as a GIF's first frame is read), to 8-bit RGB with
// alpha dropped.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ckjit::image::webp {

struct Info {
  int width = 0, height = 0;
  bool alpha = false, animated = false;
};
// The bitstream's features from its header; throws ckjit::Error naming `name` when they cannot be read.
Info info(std::span<const uint8_t> bytes, const std::string& name);

// The image (or first frame) as width x height RGB triples, sizes as info() gave them; throws
// ckjit::Error naming `name` for corrupt or truncated data.
std::vector<uint8_t> decode_rgb(std::span<const uint8_t> bytes, const std::string& name, const Info& info);

}  // namespace ckjit::image::webp
