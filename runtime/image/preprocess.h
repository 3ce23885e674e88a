#pragma once
// Qwen3-VL image preprocessing exactly as the peer (llama.cpp b10256 mtmd) does it for the
// qwen3vl_merger projector (spec/qwen3vl.md C.1): a target size that is a multiple of
// patch * merge (32) within a pixel budget (min/max image tokens), an aspect-preserving bilinear
// resize on uint8 pasted centred on a black canvas, then (u8 / 255 - mean) / std per channel.
#include <cstdint>

#include "runtime/image/image.h"

namespace ckjit::image {

struct PreprocessParams {
  int patch = 16, merge = 2;
  int64_t min_tokens = 8, max_tokens = 4096;  // llama.cpp's defaults; --image-min-tokens / --image-max-tokens
  float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};
  int factor() const { return patch * merge; }
};

// Where the image goes: a canvas of width x height (multiples of factor), the content resized to
// content_w x content_h at (x0, y0), the rest black.
struct ResizePlan {
  int width = 0, height = 0;
  int content_w = 0, content_h = 0, x0 = 0, y0 = 0;
  int64_t n_tokens(int factor) const { return int64_t(width / factor) * int64_t(height / factor); }
};

// Errors: a budget that cannot hold one token, min above max.
ResizePlan plan_resize(int width, int height, const PreprocessParams& p);

// llama.cpp's bilinear resize on uint8 (align-corners ratios, truncating to uint8).
Rgb8 resize_bilinear(const Rgb8& src, int width, int height);

struct PixelsF32 {
  int width = 0, height = 0;
  std::vector<float> rgb;  // height rows of width interleaved RGB floats, normalised
  ResizePlan plan;
};

PixelsF32 preprocess(const Rgb8& img, const PreprocessParams& p);

}  // namespace ckjit::image
