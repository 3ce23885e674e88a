#pragma once
// Test images written with the libraries' own encoders (libtiff, libwebp, libwebpmux), so the
// decoders are checked against files another writer made: TIFF pages (8 or 16 bits, RGB or grey,
// any compression libtiff writes) and WebP (lossless, lossy, with alpha, animated).
#include <cstdint>
#include <string>
#include <vector>

namespace image_test {

// w x h RGB triples whose every pixel differs from its neighbours (x, y and the seed).
std::vector<uint8_t> pattern(int w, int h, int seed);

struct TiffPage {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;   // width x height RGB triples (grey pages use the R channel)
  uint16_t compression = 1;   // COMPRESSION_NONE; 5 LZW, 8 deflate (zip), 32773 packbits
  int bits = 8;               // 8 or 16 (16: each byte written twice, v * 257)
  bool grey = false;
};
std::string make_tiff(const std::vector<TiffPage>& pages);

std::string make_webp_lossless(const std::vector<uint8_t>& rgb, int w, int h);
std::string make_webp_lossy(const std::vector<uint8_t>& rgb, int w, int h, float quality);
// RGBA, lossless: what a decoder that drops alpha must give back is the RGB.
std::string make_webp_rgba(const std::vector<uint8_t>& rgba, int w, int h);
// An animation of whole-canvas lossless frames.
std::string make_webp_animation(const std::vector<std::vector<uint8_t>>& frames_rgb, int w, int h);

}  // namespace image_test
