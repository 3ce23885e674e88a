// Writes the benchmark page: the committed sample page (assets/sample-page.png, 816 x 1056) scaled
// to a height of SIDE and centred on a white SIDE x SIDE canvas, so that both runtimes read a square
// page of (SIDE/32)^2 rows (1024 rows at the default 1024) — the workload perf/compare times.
//   make_page OUT.png [SIDE=1024] [SRC=assets/sample-page.png]
#include <stb_image_write.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/image/image.h"
#include "runtime/image/preprocess.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_page OUT.png [SIDE=1024] [SRC=assets/sample-page.png]\n");
    return 2;
  }
  const int side = argc > 2 ? std::atoi(argv[2]) : 1024;
  const std::string src = argc > 3 ? argv[3] : std::string(CKJIT_SOURCE_DIR) + "/assets/sample-page.png";
  if (side < 32 || side > 8192) {
    std::fprintf(stderr, "make_page: SIDE must be in [32, 8192]\n");
    return 2;
  }
  try {
    const ckjit::image::Rgb8 page = ckjit::image::load(src);
    const int h = side, w = std::max(1, int(double(page.width) * side / page.height + 0.5));
    const ckjit::image::Rgb8 scaled = ckjit::image::resize_bilinear(page, std::min(w, side), h);
    std::vector<uint8_t> canvas(size_t(side) * size_t(side) * 3, 255);
    const int x0 = (side - scaled.width) / 2;
    for (int y = 0; y < scaled.height; ++y)
      for (int x = 0; x < scaled.width; ++x)
        for (int c = 0; c < 3; ++c) canvas[(size_t(y) * side + size_t(x0 + x)) * 3 + size_t(c)] = scaled.at(x, y, c);
    if (!stbi_write_png(argv[1], side, side, 3, canvas.data(), side * 3)) {
      std::fprintf(stderr, "make_page: cannot write %s\n", argv[1]);
      return 1;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "make_page: %s\n", e.what());
    return 1;
  }
  return 0;
}
