#include "runtime/image/preprocess.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"

namespace ckjit::image {

ResizePlan plan_resize(int W, int H, const PreprocessParams& p) {
  if (W < 1 || H < 1) throw Error("image preprocessing: empty image");
  if (p.min_tokens < 1 || p.max_tokens < p.min_tokens)
    throw Error("image preprocessing: want 1 <= $image_min_tokens <= $image_max_tokens (have " +
                std::to_string(p.min_tokens) + ", " + std::to_string(p.max_tokens) + ")");
  // llama.cpp computes in float32; round() is half away from zero.
  const float f = float(p.factor());
  const float min_pixels = float(p.min_tokens) * f * f, max_pixels = float(p.max_tokens) * f * f;
  const float fw = float(W), fh = float(H);
  float h = std::max(f, std::round(fh / f) * f), w = std::max(f, std::round(fw / f) * f);
  if (h * w > max_pixels) {
    const float beta = std::sqrt(fh * fw / max_pixels);
    h = std::max(f, std::floor(fh / beta / f) * f);
    w = std::max(f, std::floor(fw / beta / f) * f);
  } else if (h * w < min_pixels) {
    const float beta = std::sqrt(min_pixels / (fh * fw));
    h = std::ceil(fh * beta / f) * f;
    w = std::ceil(fw * beta / f) * f;
  }
  ResizePlan r;
  r.width = int(w);
  r.height = int(h);
  if (r.width == W && r.height == H) {
    r.content_w = W, r.content_h = H;
    return r;
  }
  const float s = std::min(w / fw, h / fh);
  r.content_w = std::min(int(std::ceil(fw * s)), r.width);
  r.content_h = std::min(int(std::ceil(fh * s)), r.height);
  r.x0 = (r.width - r.content_w) / 2;
  r.y0 = (r.height - r.content_h) / 2;
  return r;
}

Rgb8 resize_bilinear(const Rgb8& src, int nw, int nh) {
  Rgb8 out;
  out.width = nw;
  out.height = nh;
  out.pixels.resize(size_t(nw) * size_t(nh) * 3);
  const int W = src.width, H = src.height;
  const float rx = nw > 1 ? float(W - 1) / float(nw - 1) : 0.0f;
  const float ry = nh > 1 ? float(H - 1) / float(nh - 1) : 0.0f;
  for (int y = 0; y < nh; ++y) {
    const float py = float(y) * ry;
    const int y0 = std::min(int(py), H - 1), y1 = std::min(y0 + 1, H - 1);
    const float fy = py - float(y0);
    for (int x = 0; x < nw; ++x) {
      const float px = float(x) * rx;
      const int x0 = std::min(int(px), W - 1), x1 = std::min(x0 + 1, W - 1);
      const float fx = px - float(x0);
      for (int c = 0; c < 3; ++c) {
        const float p00 = src.at(x0, y0, c), p10 = src.at(x1, y0, c), p01 = src.at(x0, y1, c), p11 = src.at(x1, y1, c);
        const float top = p00 + (p10 - p00) * fx, bot = p01 + (p11 - p01) * fx;
        out.pixels[(size_t(y) * size_t(nw) + size_t(x)) * 3 + size_t(c)] = uint8_t(top + (bot - top) * fy);
      }
    }
  }
  return out;
}

PixelsF32 preprocess(const Rgb8& img, const PreprocessParams& p) {
  PixelsF32 out;
  out.plan = plan_resize(img.width, img.height, p);
  const ResizePlan& r = out.plan;
  Rgb8 canvas;
  if (r.width == img.width && r.height == img.height) {
    canvas = img;
  } else {
    const Rgb8 content = resize_bilinear(img, r.content_w, r.content_h);
    canvas.width = r.width;
    canvas.height = r.height;
    canvas.pixels.assign(size_t(r.width) * size_t(r.height) * 3, 0);
    for (int y = 0; y < r.content_h; ++y)
      std::copy_n(content.pixels.data() + size_t(y) * size_t(r.content_w) * 3, size_t(r.content_w) * 3,
                  canvas.pixels.data() + (size_t(y + r.y0) * size_t(r.width) + size_t(r.x0)) * 3);
  }
  out.width = r.width;
  out.height = r.height;
  out.rgb.resize(canvas.pixels.size());
  for (size_t i = 0; i < canvas.pixels.size(); ++i) {
    const int c = int(i % 3);
    out.rgb[i] = (float(canvas.pixels[i]) / 255.0f - p.mean[c]) / p.std[c];
  }
  return out;
}

}  // namespace ckjit::image
