#pragma once
// stb_image (Debian's libstb-dev header), compiled here for BMP only (no Debian library reads BMP;
// PNG, JPEG and GIF go through libpng, libjpeg-turbo and giflib), with one hook: every allocation stb
// makes while decoding is capped from the header's size, so a hostile header cannot take gigabytes;
// with the cap, stb fails with "outofmem" and the decode reports it.
#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace ckjit::image::stb {

struct Info {
  int width = 0, height = 0, channels = 0;
};
// The header's size and channels; false (see failure_reason) when stb cannot read it.
bool info(std::span<const uint8_t> bytes, Info& out);

struct Pixels {
  std::unique_ptr<uint8_t, void (*)(void*)> rgb{nullptr, nullptr};  // height rows of width RGB triples
  int width = 0, height = 0;
  bool over_cap = false;  // failed because one allocation would have exceeded the cap
};
// Decodes to 8-bit RGB; any single allocation above `max_alloc` bytes fails.
Pixels decode_rgb(std::span<const uint8_t> bytes, size_t max_alloc);

// stb's reason for the last failure on this thread, as printable ASCII (stb quotes raw bytes of the
// file in some reasons, such as an unknown PNG chunk's type).
std::string failure_reason();

}  // namespace ckjit::image::stb
