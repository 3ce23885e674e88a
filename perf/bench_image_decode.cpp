// JPEG decode time: libjpeg-turbo as ckjit decodes now (runtime/image/jpeg_decoder.h) against
// stb_image 2.27, the decoder ckjit used before (compiled here with the same flags as the old
// runtime/image/stb_decoder.cpp), alternating in one process; medians (perf/RESULTS-image.md).
//   bench_image_decode [FILE.jpg [N]]   default: a 4000 x 3000 (12 MP) photo-like pattern that
//                                       stb_image_write encodes at quality 90 (4:2:0), N = 10
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <stb_image_write.h>  // Debian's libstb.so

#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_JPEG
#define STBI_NO_STDIO
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-function"
#endif
#include <stb_image.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "runtime/error.h"
#include "runtime/image/jpeg_decoder.h"
#include "tests/unit/slurp.h"

using namespace ckjit;

namespace {

void append(void* ctx, void* data, int size) {
  auto* v = static_cast<std::vector<uint8_t>*>(ctx);
  v->insert(v->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
}

// Smooth gradients, edges and noise: entropy-coded data of a photo's size, not a flat page.
std::vector<uint8_t> photo_jpeg(int w, int h) {
  std::vector<uint8_t> rgb(size_t(w) * size_t(h) * 3);
  uint32_t seed = 1;
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      seed = seed * 1664525u + 1013904223u;
      const double n = double(seed >> 24) / 8.0 - 16.0;
      const double dark = ((x / 200 + y / 200) % 7 == 0) ? 0.4 : 1.0;
      const double v[3] = {128 + 100 * std::sin(x / 150.0) * std::cos(y / 210.0), 128 + 90 * std::sin((x + y) / 330.0),
                           128 + 80 * std::cos(x / 90.0 - y / 120.0)};
      for (int c = 0; c < 3; ++c) rgb[(size_t(y) * size_t(w) + size_t(x)) * 3 + size_t(c)] = uint8_t(std::clamp((v[c] + n) * dark, 0.0, 255.0));
    }
  std::vector<uint8_t> out;
  if (!stbi_write_jpg_to_func(append, &out, w, h, 3, rgb.data(), 90)) throw Error("stbi_write_jpg failed");
  return out;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) try {
  const std::string path = argc > 1 ? argv[1] : "";
  const int n = argc > 2 ? std::atoi(argv[2]) : 10;
  std::vector<uint8_t> bytes;
  if (path.empty()) {
    bytes = photo_jpeg(4000, 3000);
  } else {
    const std::string s = test_io::slurp(path);
    bytes.assign(s.begin(), s.end());
  }
  if (bytes.empty()) throw Error(path + ": cannot read");
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a) { return std::chrono::duration<double, std::milli>(clock::now() - a).count(); };
  std::vector<double> lib_ms, stb_ms;
  int w = 0, h = 0;
  for (int i = 0; i < n + 1; ++i) {  // the first round warms caches and the allocator; not counted
    auto t = clock::now();
    const image::Rgb8 img = image::jpeg::decode_rgb(bytes, "bench.jpg", image::DecodeLimits{});
    const double a = ms(t);
    t = clock::now();
    int c = 0;
    stbi_uc* p = stbi_load_from_memory(bytes.data(), int(bytes.size()), &w, &h, &c, 3);
    const double b = ms(t);
    if (!p || w != img.width || h != img.height) throw Error("stb_image failed on the file: " + std::string(stbi_failure_reason()));
    stbi_image_free(p);
    if (i > 0) lib_ms.push_back(a), stb_ms.push_back(b);
  }
  const double lib = median(lib_ms), stb = median(stb_ms);
  std::printf("%s: %d x %d, %zu bytes, %d rounds alternating\n", path.empty() ? "built-in 12 MP pattern (stb_image_write q90)" : path.c_str(), w, h,
              bytes.size(), n);
  std::printf("libjpeg-turbo (ckjit now): %.1f ms per decode (median; min %.1f)\n", lib, *std::min_element(lib_ms.begin(), lib_ms.end()));
  std::printf("stb_image 2.27 (before):   %.1f ms per decode (median; min %.1f)\n", stb, *std::min_element(stb_ms.begin(), stb_ms.end()));
  std::printf("speed-up: %.2fx\n", stb / lib);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_image_decode: %s\n", e.what());
  return 1;
}
