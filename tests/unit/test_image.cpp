// Image decoding (PNG/JPEG/BMP/GIF, validated before decoding) and Qwen3-VL preprocessing as
// llama.cpp's mtmd does it (spec/qwen3vl.md C.1).
#include <doctest/doctest.h>

#include <stb_image_write.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "runtime/error.h"
#include "runtime/image/image.h"
#include "runtime/image/preprocess.h"
#include "tests/unit/gif_writer.h"

using namespace ckjit;
using namespace ckjit::image;

namespace {

void append(void* ctx, void* data, int size) {
  auto* v = static_cast<std::vector<uint8_t>*>(ctx);
  v->insert(v->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
}

std::vector<uint8_t> pixels(int w, int h, int comp) {
  std::vector<uint8_t> p(size_t(w) * size_t(h) * size_t(comp));
  for (size_t i = 0; i < p.size(); ++i) p[i] = uint8_t((i * 37 + i / 7) % 251);
  return p;
}

std::vector<uint8_t> png(int w, int h, int comp) {
  std::vector<uint8_t> out;
  const auto p = pixels(w, h, comp);
  REQUIRE(stbi_write_png_to_func(append, &out, w, h, comp, p.data(), w * comp));
  return out;
}

}  // namespace

TEST_SUITE("image") {

TEST_CASE("image: PNG / BMP and JPEG decode to RGB - grey and RGBA are converted") {
  for (int comp : {1, 2, 3, 4}) {
    CAPTURE(comp);
    const Rgb8 img = decode(png(7, 5, comp), "t.png");
    CHECK(img.width == 7);
    CHECK(img.height == 5);
    REQUIRE(img.pixels.size() == 7u * 5u * 3u);
    const auto src = pixels(7, 5, comp);
    // Pixel (3, 2): grey expands to r = g = b; alpha is dropped.
    const size_t i = (2 * 7 + 3) * size_t(comp);
    if (comp <= 2) CHECK((img.at(3, 2, 0) == src[i] && img.at(3, 2, 1) == src[i] && img.at(3, 2, 2) == src[i]));
    else CHECK((img.at(3, 2, 0) == src[i] && img.at(3, 2, 1) == src[i + 1] && img.at(3, 2, 2) == src[i + 2]));
  }
  std::vector<uint8_t> bmp, jpg;
  const auto p = pixels(9, 4, 3);
  REQUIRE(stbi_write_bmp_to_func(append, &bmp, 9, 4, 3, p.data()));
  REQUIRE(stbi_write_jpg_to_func(append, &jpg, 9, 4, 3, p.data(), 95));
  CHECK(sniff_format(bmp) == Format::Bmp);
  CHECK(sniff_format(jpg) == Format::Jpeg);
  CHECK(decode(bmp, "t.bmp").pixels == p);  // lossless
  CHECK(decode(jpg, "t.jpg").width == 9);
}

TEST_CASE("image: a GIF decodes to its first frame and its header size is checked") {
  const int w = 37, h = 11;
  std::vector<uint8_t> first(size_t(w) * h), second(size_t(w) * h, 7);
  for (size_t i = 0; i < first.size(); ++i) first[i] = uint8_t((i * 13) % 256);
  const std::string g = gif_test::make_gif(w, h, {first, second});
  const std::vector<uint8_t> bytes(g.begin(), g.end());
  CHECK(sniff_format(bytes) == Format::Gif);
  const Header hd = read_header(bytes, "t.gif");
  CHECK(hd.width == w);
  CHECK(hd.height == h);
  const Rgb8 img = decode(bytes, "t.gif");
  REQUIRE(img.width == w);
  REQUIRE(img.height == h);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x) {
      const uint8_t v = first[size_t(y) * w + x];  // the grey ramp: index v is (v, v, v)
      CHECK((img.at(x, y, 0) == v && img.at(x, y, 1) == v && img.at(x, y, 2) == v));
    }
  // A logical screen past the pixel limit is refused from the header, before decoding.
  std::vector<uint8_t> huge = bytes;
  huge[6] = huge[7] = huge[8] = huge[9] = 0xff;  // 65535 x 65535
  CHECK_THROWS_WITH_AS(decode(huge, "huge.gif"), doctest::Contains("65535 x 65535"), Error);
  std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + 800);
  CHECK_THROWS_AS(decode(cut, "cut.gif"), Error);
}

TEST_CASE("image: a file of another format is named in the error") {
  auto error_of = [](std::string b) {
    try {
      decode(std::vector<uint8_t>(b.begin(), b.end()), "f");
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("decoded");
  };
  CHECK(error_of(std::string("\0\0\0\x0cjP  \r\n", 10)).find("a JPEG 2000 image, which ckjit does not read") != std::string::npos);
  CHECK(error_of("%PDF-1.7\n").find("a PDF document") != std::string::npos);
  CHECK(error_of("just some notes\n").find("text, which ckjit does not read") != std::string::npos);
  CHECK(error_of(std::string("\x01\x02\x03\x04", 4)).find("not an image ckjit reads") != std::string::npos);
  CHECK(error_of("just some notes\n").find("PNG, JPEG, BMP, GIF, TIFF and WebP") != std::string::npos);
}

TEST_CASE("image: bad input is a clear error naming the image") {
  CHECK_THROWS_WITH_AS(decode({}, "a.png"), doctest::Contains("a.png: empty image"), Error);
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o', '!', '!', '!', '!'};
  CHECK_THROWS_WITH_AS(decode(text, "b.png"), doctest::Contains("b.png: text, which ckjit does not read"), Error);
  std::vector<uint8_t> p = png(64, 64, 3);
  for (size_t cut : {size_t(12), size_t(40), p.size() / 2, p.size() - 13}) {
    CAPTURE(cut);
    std::vector<uint8_t> t(p.begin(), p.begin() + long(cut));
    CHECK_THROWS_AS(decode(t, "cut.png"), Error);
  }
  // A header claiming 30000 x 30000: refused before any pixel is decoded.
  std::vector<uint8_t> bomb = png(2, 2, 3);
  const uint32_t big = 30000;
  const uint8_t be[4] = {uint8_t(big >> 24), uint8_t(big >> 16), uint8_t(big >> 8), uint8_t(big)};
  std::memcpy(bomb.data() + 16, be, 4);  // IHDR width
  std::memcpy(bomb.data() + 20, be, 4);  // IHDR height
  CHECK_THROWS_WITH_AS(decode(bomb, "bomb.png"), doctest::Contains("claims 30000 x 30000"), Error);
  CHECK_THROWS_WITH_AS(load("/nonexistent/x.png"), doctest::Contains("cannot open image"), Error);
}

TEST_CASE("image: fuzzer findings stay fixed (tests/fixtures/hostile-images)") {
  // Files that broke stb_image's PNG and JPEG code when it decoded them (sessions 7 and after): each
  // is now libpng's or libjpeg-turbo's to refuse, with its reason in the message.
  const std::string dir = std::string(CKJIT_FIXTURES_DIR) + "/hostile-images/";
  // A DHT listing more than 256 codes (stb wrote past its size table), plain, behind stray bytes
  // between header segments, and running past the end of the file.
  for (const char* f : {"jpeg-huffman-257-codes.jpg", "jpeg-huffman-after-stray-bytes.jpg", "jpeg-huffman-past-end.jpg"}) {
    CAPTURE(f);
    CHECK_THROWS_WITH_AS(load(dir + f), doctest::Contains("corrupt or truncated JPEG (libjpeg-turbo: Bogus Huffman table definition)"), Error);
  }
  // A progressive JPEG whose AC scan names a table no DHT defined (stb read uninitialised memory).
  CHECK_THROWS_WITH_AS(load(dir + "jpeg-scan-uses-undefined-table.jpg"), doctest::Contains("Huffman table 0x00 was not defined"), Error);
  // A PNG whose first IDAT is empty and whose next chunk has a binary type: a clean error whose
  // message, which quotes the chunk's type, is printable ASCII only.
  try {
    (void)load(dir + "png-empty-first-idat.png");
    FAIL("png-empty-first-idat.png decoded");
  } catch (const Error& e) {
    const std::string m = e.what();
    CHECK(m.find("invalid chunk type") != std::string::npos);
    CHECK(std::all_of(m.begin(), m.end(), [](char c) { return c >= 0x20 && c <= 0x7e; }));
  }
  // A 90-byte PNG whose IDAT claims 1.2 GB (stb allocated 2 GiB for it): libpng streams the chunk
  // and finds the image data short.
  CHECK_THROWS_WITH_AS(load(dir + "png-idat-claims-1g.png"), doctest::Contains("corrupt or truncated PNG (libpng: Not enough image data)"), Error);
  // A 64 x 64 PNG whose zlib stream inflates to 64 MiB (stb inflated all of it into one growing
  // buffer): libpng inflates only the rows the header asks for, and the extra data is ignored.
  const Rgb8 bomb = load(dir + "png-zlib-bomb-64mib.png");
  CHECK((bomb.width == 64 && bomb.height == 64));
  const Rgb8 ok = load(std::string(CKJIT_FIXTURES_DIR) + "/vision/images/big-640x480.jpg");
  CHECK(ok.width == 640);
}

TEST_CASE("image: progressive / restart-marker and padded JPEGs decode to the same pixels") {
  // tests/fixtures/jpeg-variants: one crop written by jpegtran as baseline, progressive and with a
  // restart marker after every MCU, plus stray zero bytes after the first header segment (which
  // libjpeg-turbo skips with a warning, as stb did). The coefficients are the same, so the pixels are.
  const std::string dir = std::string(CKJIT_FIXTURES_DIR) + "/jpeg-variants/";
  const Rgb8 base = load(dir + "baseline-96x64.jpg");
  CHECK((base.width == 96 && base.height == 64));
  for (const char* f : {"progressive-96x64.jpg", "restart-96x64.jpg", "padded-96x64.jpg"}) {
    CAPTURE(f);
    const Rgb8 v = load(dir + f);
    CHECK(v.pixels == base.pixels);
  }
}

TEST_CASE("preprocess: target sizes follow llama.cpp's smart resize") {
  PreprocessParams p;
  // spec C.1's example: 1000 x 500 -> 992 x 512 canvas, content 992 x 496 at (0, 8).
  ResizePlan r = plan_resize(1000, 500, p);
  CHECK(r.width == 992);
  CHECK(r.height == 512);
  CHECK(r.content_w == 992);
  CHECK(r.content_h == 496);
  CHECK(r.x0 == 0);
  CHECK(r.y0 == 8);
  CHECK(r.n_tokens(32) == 496);
  // 640 x 480 needs no resize (spec D.4's example: 300 tokens).
  r = plan_resize(640, 480, p);
  CHECK((r.width == 640 && r.height == 480 && r.content_w == 640 && r.x0 == 0));
  CHECK(r.n_tokens(32) == 300);
  // Large pages are capped at max tokens, small ones raised to min tokens; multiples of 32 always.
  for (const auto& w_h_ : std::vector<std::pair<int, int>>{{8000, 8000}, {4961, 7016}, {20, 10}, {1, 1}, {3000, 40}, {33, 2000}}) {
    const auto& w = std::get<0>(w_h_);
    const auto& h = std::get<1>(w_h_);
    CAPTURE(w);
    CAPTURE(h);
    r = plan_resize(w, h, p);
    CHECK(r.width % 32 == 0);
    CHECK(r.height % 32 == 0);
    CHECK(r.n_tokens(32) <= p.max_tokens);
    CHECK(r.content_w <= r.width);
    CHECK(r.content_h <= r.height);
    if (int64_t(w) * h < 8 * 1024) CHECK(r.n_tokens(32) >= p.min_tokens);
  }
  PreprocessParams budget = p;
  budget.max_tokens = 256;
  r = plan_resize(4000, 3000, budget);
  CHECK(r.n_tokens(32) <= 256);
  CHECK(r.n_tokens(32) >= 200);
  budget.min_tokens = 300;
  CHECK_THROWS_AS(plan_resize(10, 10, budget), Error);
}

TEST_CASE("preprocess: bilinear resize / black padding and normalisation") {
  Rgb8 img;
  img.width = 3;
  img.height = 2;
  img.pixels = {0, 0, 0, 100, 50, 10, 200, 100, 20, 50, 50, 50, 150, 150, 150, 250, 250, 250};
  // Same size: a copy. Corners map to corners (align-corners ratios).
  Rgb8 same = resize_bilinear(img, 3, 2);
  CHECK(same.pixels == img.pixels);
  Rgb8 up = resize_bilinear(img, 5, 3);
  CHECK(up.at(0, 0, 0) == 0);
  CHECK(up.at(4, 2, 0) == 250);
  CHECK(up.at(2, 0, 0) == 100);  // x = 2 * (2/4) = 1 exactly
  CHECK(up.at(1, 0, 0) == 50);   // halfway between 0 and 100
  CHECK(up.at(0, 1, 0) == 25);   // halfway between 0 and 50
  // 40 x 25 is raised to the 8-token minimum: a 128 x 96 canvas, content 128 x 80 at (0, 8).
  Rgb8 small;
  small.width = 40;
  small.height = 25;
  small.pixels.assign(40 * 25 * 3, 255);
  const PixelsF32 px = preprocess(small, PreprocessParams{});
  const ResizePlan& r = px.plan;
  REQUIRE(px.rgb.size() == size_t(r.width) * size_t(r.height) * 3);
  CHECK(px.rgb[(size_t(r.y0) * size_t(r.width) + size_t(r.x0)) * 3] == 1.0f);  // white: (1 - 0.5) / 0.5
  CHECK((r.width == 128 && r.height == 96 && r.content_w == 128 && r.content_h == 80 && r.y0 == 8));
  CHECK(px.rgb[0] == -1.0f);                        // black padding
  CHECK(px.rgb[px.rgb.size() - 1] == -1.0f);
}

}  // TEST_SUITE
