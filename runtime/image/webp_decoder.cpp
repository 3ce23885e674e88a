#include "runtime/image/webp_decoder.h"

#include <webp/decode.h>
#include <webp/demux.h>

#include <memory>

#include "runtime/error.h"

namespace ckjit::image::webp {

namespace {

std::string status_text(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "truncated data";
    default: return "error " + std::to_string(int(s));
  }
}

}  // namespace

Info info(std::span<const uint8_t> bytes, const std::string& name) {
  WebPBitstreamFeatures f;
  const VP8StatusCode st = WebPGetFeatures(bytes.data(), bytes.size(), &f);
  if (st != VP8_STATUS_OK) throw Error(name + ": unreadable WebP header (" + status_text(st) + ")");
  return {f.width, f.height, f.has_alpha != 0, f.has_animation != 0};
}

std::vector<uint8_t> decode_rgb(std::span<const uint8_t> bytes, const std::string& name, const Info& in) {
  const size_t n = size_t(in.width) * size_t(in.height);
  std::vector<uint8_t> rgb(n * 3);
  if (!in.animated) {
    if (!WebPDecodeRGBInto(bytes.data(), bytes.size(), rgb.data(), rgb.size(), in.width * 3))
      throw Error(name + ": corrupt or truncated WebP data");
    return rgb;
  }
  WebPAnimDecoderOptions opts;
  if (!WebPAnimDecoderOptionsInit(&opts)) throw Error(name + ": libwebp version mismatch");
  opts.color_mode = MODE_RGBA;
  opts.use_threads = 0;
  const WebPData data{bytes.data(), bytes.size()};
  const std::unique_ptr<WebPAnimDecoder, void (*)(WebPAnimDecoder*)> dec(WebPAnimDecoderNew(&data, &opts), WebPAnimDecoderDelete);
  if (!dec) throw Error(name + ": unreadable animated WebP");
  WebPAnimInfo ai;
  if (!WebPAnimDecoderGetInfo(dec.get(), &ai) || int(ai.canvas_width) != in.width || int(ai.canvas_height) != in.height)
    throw Error(name + ": animated WebP whose canvas differs from its header");
  uint8_t* frame = nullptr;
  int timestamp = 0;
  if (!WebPAnimDecoderGetNext(dec.get(), &frame, &timestamp) || !frame)
    throw Error(name + ": corrupt or truncated first frame of an animated WebP");
  for (size_t i = 0; i < n; ++i) rgb[3 * i] = frame[4 * i], rgb[3 * i + 1] = frame[4 * i + 1], rgb[3 * i + 2] = frame[4 * i + 2];
  return rgb;
}

}  // namespace ckjit::image::webp
