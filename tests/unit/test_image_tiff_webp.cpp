// TIFF (libtiff: every page, compressions, 16-bit, grey) and WebP (libwebp: lossless, lossy, alpha,
// an animation's first frame) through runtime/image, on files the libraries' own encoders wrote;
// hostile and cut files are errors naming the image.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/image/image.h"
#include "tests/unit/image_writers.h"

using namespace ckjit::image;
using image_test::pattern;
using image_test::TiffPage;

namespace {

std::span<const uint8_t> bytes_of(const std::string& s) { return {reinterpret_cast<const uint8_t*>(s.data()), s.size()}; }

// Decodes and returns "" or the error's text: hostile files must give one or the other, nothing else.
std::string outcome(const std::string& file) {
  try {
    (void)read_header(bytes_of(file), "f");
    const Rgb8 px = decode(bytes_of(file), "f");
    CHECK(px.pixels.size() == size_t(px.width) * size_t(px.height) * 3);
    return "";
  } catch (const ckjit::Error& e) {
    return e.what();
  }
}

}  // namespace

TEST_SUITE("image") {

TEST_CASE("image TIFF: 8-bit RGB in every compression libtiff writes / 16-bit and grey decode to the written pixels") {
  const int w = 37, h = 23;
  const std::vector<uint8_t> px = pattern(w, h, 1);
  for (uint16_t comp : {uint16_t(1), uint16_t(5), uint16_t(8), uint16_t(32773)}) {
    CAPTURE(comp);
    const std::string f = image_test::make_tiff({TiffPage{w, h, px, comp}});
    CHECK(sniff_format(bytes_of(f)) == Format::Tiff);
    const Header hd = read_header(bytes_of(f), "f");
    CHECK(hd.format == Format::Tiff);
    CHECK(hd.width == w);
    CHECK(hd.height == h);
    CHECK(hd.pages == 1);
    const Rgb8 got = decode(bytes_of(f), "f");
    CHECK(got.width == w);
    CHECK(got.height == h);
    CHECK(got.pixels == px);
  }
  const Rgb8 wide = decode(bytes_of(image_test::make_tiff({TiffPage{w, h, px, 8, 16}})), "f");
  CHECK(wide.pixels == px);  // v * 257 read back as v
  const Rgb8 grey = decode(bytes_of(image_test::make_tiff({TiffPage{w, h, px, 5, 8, true}})), "f");
  REQUIRE(grey.pixels.size() == px.size());
  bool all_grey = true;
  for (size_t i = 0; i < px.size(); i += 3)
    all_grey &= grey.pixels[i] == px[i] && grey.pixels[i + 1] == px[i] && grey.pixels[i + 2] == px[i];
  CHECK(all_grey);
}

TEST_CASE("image TIFF: every page of a multi-page file / each in its own size / a page past the last is an error") {
  const std::vector<TiffPage> pages = {{40, 30, pattern(40, 30, 1), 5}, {17, 61, pattern(17, 61, 2), 8}, {64, 8, pattern(64, 8, 3), 1}};
  const std::string f = image_test::make_tiff(pages);
  const Header hd = read_header(bytes_of(f), "scan.tif");
  CHECK(hd.pages == 3);
  CHECK(hd.width == 40);
  CHECK(hd.height == 30);
  for (int p = 0; p < 3; ++p) {
    CAPTURE(p);
    const Rgb8 got = decode_page(bytes_of(f), "scan.tif", p);
    CHECK(got.width == pages[size_t(p)].width);
    CHECK(got.height == pages[size_t(p)].height);
    CHECK(got.pixels == pages[size_t(p)].rgb);
  }
  CHECK(decode(bytes_of(f), "scan.tif").pixels == pages[0].rgb);
  CHECK_THROWS_WITH_AS(decode_page(bytes_of(f), "scan.tif", 3), doctest::Contains("scan.tif: no page 4 (the image has 3)"), ckjit::Error);
  // Each page is held to the limits before anything is decoded, named by its number.
  DecodeLimits small;
  small.max_side = 50;
  CHECK_THROWS_WITH_AS(read_header(bytes_of(f), "scan.tif", small), doctest::Contains("scan.tif page 2: image header claims 17 x 61"),
                       ckjit::Error);
}

TEST_CASE("image TIFF: a header claiming a huge page is refused before decoding / cut and damaged files are errors") {
  std::string f = image_test::make_tiff({TiffPage{20, 20, pattern(20, 20, 4), 5}});
  CHECK(outcome(f).empty());
  // Every cut: an error naming the image, or (cut only in padding) the image.
  for (size_t n = 0; n < f.size(); n += 7) {
    const std::string o = outcome(f.substr(0, n));
    CAPTURE(n);
    if (!o.empty()) CHECK(o.rfind("f: ", 0) == 0);
  }
  // Bytes flipped across the file: never a crash or a sanitizer report.
  for (size_t i = 0; i < f.size(); ++i) {
    std::string g = f;
    g[i] = char(g[i] ^ 0x5a);
    (void)outcome(g);
  }
  // A 100000 x 100000 page: refused from its directory.
  const std::string big = image_test::make_tiff({TiffPage{1, 1, pattern(1, 1, 0), 1}});
  // The IFD's ImageWidth / ImageLength entries (tags 256, 257, type SHORT or LONG) rewritten to 100000.
  std::string huge = big;
  const uint32_t ifd = uint32_t(uint8_t(huge[4])) | uint32_t(uint8_t(huge[5])) << 8 | uint32_t(uint8_t(huge[6])) << 16 | uint32_t(uint8_t(huge[7])) << 24;
  REQUIRE(huge.substr(0, 2) == "II");
  const int n = uint8_t(huge[ifd]) | uint8_t(huge[ifd + 1]) << 8;
  for (int e = 0; e < n; ++e) {
    const size_t at = ifd + 2 + size_t(e) * 12;
    const int tag = uint8_t(huge[at]) | uint8_t(huge[at + 1]) << 8;
    if (tag != 256 && tag != 257) continue;
    huge[at + 2] = 4, huge[at + 3] = 0;  // LONG
    const uint32_t v = 100000;
    for (int k = 0; k < 4; ++k) huge[at + 8 + size_t(k)] = char(v >> (8 * k));
  }
  CHECK(outcome(huge).find("f: image header claims 100000 x 100000 pixels") != std::string::npos);
}

TEST_CASE("image WebP: lossless exactly / lossy closely / alpha dropped / an animation's first frame / cut files are errors") {
  const int w = 33, h = 21;
  const std::vector<uint8_t> px = pattern(w, h, 5);
  const std::string lossless = image_test::make_webp_lossless(px, w, h);
  CHECK(sniff_format(bytes_of(lossless)) == Format::Webp);
  const Header hd = read_header(bytes_of(lossless), "f");
  CHECK(hd.width == w);
  CHECK(hd.height == h);
  CHECK(decode(bytes_of(lossless), "f").pixels == px);

  const Rgb8 lossy = decode(bytes_of(image_test::make_webp_lossy(px, w, h, 95)), "f");
  REQUIRE(lossy.pixels.size() == px.size());
  double err = 0;
  for (size_t i = 0; i < px.size(); ++i) err += std::abs(int(lossy.pixels[i]) - int(px[i]));
  CHECK(err / double(px.size()) < 24);  // a coded pattern, not noise (YUV 4:2:0 of a busy pattern)

  std::vector<uint8_t> rgba;
  for (size_t i = 0; i < px.size(); i += 3) rgba.insert(rgba.end(), {px[i], px[i + 1], px[i + 2], uint8_t(i % 251)});
  const std::string alpha = image_test::make_webp_rgba(rgba, w, h);
  CHECK(read_header(bytes_of(alpha), "f").channels == 4);
  CHECK(decode(bytes_of(alpha), "f").pixels == px);

  const std::vector<uint8_t> second = pattern(w, h, 6);
  const std::string anim = image_test::make_webp_animation({px, second}, w, h);
  CHECK(decode(bytes_of(anim), "f").pixels == px);

  for (const std::string* f : {&lossless, &alpha, &anim})
    for (size_t n = 0; n < f->size(); n += 5) {
      const std::string o = outcome(f->substr(0, n));
      CAPTURE(n);
      CHECK_FALSE(o.empty());  // WebP's RIFF size says what is missing
      CHECK(o.rfind("f: ", 0) == 0);
    }
}

TEST_CASE("image: TIFF and WebP sniffed in both byte orders and BigTIFF / a format still unread is named") {
  auto sniff = [](const std::string& s) { return sniff_format(bytes_of(s)); };
  CHECK(sniff(std::string("II*\0", 4)) == Format::Tiff);
  CHECK(sniff(std::string("MM\0*", 4)) == Format::Tiff);
  CHECK(sniff(std::string("II+\0", 4)) == Format::Tiff);
  CHECK(sniff(std::string("MM\0+", 4)) == Format::Tiff);
  CHECK(sniff(std::string("RIFF\0\0\0\0WEBP", 12)) == Format::Webp);
  CHECK(sniff(std::string("RIFF\0\0\0\0WAVE", 12)) == Format::Unknown);
  CHECK(outcome(std::string("\0\0\0\x18" "ftypheic\0\0\0\0", 16)).find("a HEIC image, which ckjit does not read") != std::string::npos);
}

}  // TEST_SUITE
