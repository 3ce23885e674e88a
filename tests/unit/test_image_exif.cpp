// EXIF orientation: a JPEG stored sideways with its orientation tag decodes upright, and its header
// reports the upright size; a missing or broken EXIF segment leaves the image as stored.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/image/exif.h"
#include "runtime/image/image.h"
#include "tests/unit/slurp.h"

using namespace ckjit::image;

namespace {

std::vector<uint8_t> fixture_jpeg() {
  const std::string s = test_io::slurp(std::string(CKJIT_FIXTURES_DIR) + "/jpeg-variants/baseline-96x64.jpg");
  return std::vector<uint8_t>(s.begin(), s.end());
}

// The JPEG with an APP1 Exif segment holding one IFD0 entry: orientation o (little or big endian).
std::vector<uint8_t> with_orientation(std::vector<uint8_t> jpeg, int o, bool big_endian) {
  std::vector<uint8_t> tiff;
  auto u16 = [&](uint32_t v) {
    if (big_endian) tiff.push_back(uint8_t(v >> 8)), tiff.push_back(uint8_t(v));
    else tiff.push_back(uint8_t(v)), tiff.push_back(uint8_t(v >> 8));
  };
  auto u32 = [&](uint32_t v) {
    if (big_endian) u16(v >> 16), u16(v & 0xFFFF);
    else u16(v & 0xFFFF), u16(v >> 16);
  };
  tiff.push_back(big_endian ? 'M' : 'I'), tiff.push_back(big_endian ? 'M' : 'I');
  u16(42), u32(8);             // the TIFF header, IFD0 at 8
  u16(2);                      // two entries
  u16(0x010F), u16(2), u32(4), u32(0);  // Make (ignored)
  u16(0x0112), u16(3), u32(1), u16(uint32_t(o)), u16(0);
  u32(0);
  std::vector<uint8_t> seg{0xFF, 0xE1, 0, 0, 'E', 'x', 'i', 'f', 0, 0};
  seg.insert(seg.end(), tiff.begin(), tiff.end());
  const size_t len = seg.size() - 2;
  seg[2] = uint8_t(len >> 8), seg[3] = uint8_t(len);
  jpeg.insert(jpeg.begin() + 2, seg.begin(), seg.end());
  return jpeg;
}

}  // namespace

TEST_CASE("exif: each orientation turns the stored pixels upright and the header reports the upright size" * doctest::test_suite("image")) {
  const std::vector<uint8_t> plain = fixture_jpeg();
  REQUIRE(plain.size() > 100);
  const Rgb8 stored = decode(plain, "plain");
  REQUIRE(stored.width == 96);
  REQUIRE(stored.height == 64);
  CHECK(exif_orientation(plain) == 1);
  for (int o = 1; o <= 8; ++o)
    for (bool be : {false, true}) {
      CAPTURE(o);
      CAPTURE(be);
      const std::vector<uint8_t> tagged = with_orientation(plain, o, be);
      CHECK(exif_orientation(tagged) == o);
      const Header h = read_header(tagged, "tagged");
      const Rgb8 up = decode(tagged, "tagged");
      CHECK(h.width == up.width);
      CHECK(h.height == up.height);
      CHECK(up.width == (o >= 5 ? 64 : 96));
      // Corner checks against the stored image: where the stored top-left pixel lands.
      const int W = up.width - 1, H = up.height - 1;
      const int at[9][2] = {{0, 0}, {0, 0}, {W, 0}, {W, H}, {0, H}, {0, 0}, {W, 0}, {W, H}, {0, H}};
      for (int c = 0; c < 3; ++c) CHECK(up.at(at[o][0], at[o][1], c) == stored.at(0, 0, c));
      // Turning twice by 90 one way and back gives the stored pixels (6 then 8).
      if (o == 6) CHECK(apply_orientation(up, 8).pixels == stored.pixels);
    }
}

TEST_CASE("exif: cut or foreign segments are read as no orientation" * doctest::test_suite("image")) {
  std::vector<uint8_t> tagged = with_orientation(fixture_jpeg(), 6, false);
  std::vector<uint8_t> cut(tagged.begin(), tagged.begin() + 20);
  CHECK(exif_orientation(cut) == 1);
  std::vector<uint8_t> wrong = tagged;
  wrong[12] = 'X';  // the TIFF byte order mark (the segment: FF E1, length, "Exif\0\0", then TIFF at 12)
  CHECK(exif_orientation(wrong) == 1);
  wrong = tagged;
  wrong[19] = 0x7F;  // IFD0's offset far outside the segment
  CHECK(exif_orientation(wrong) == 1);
  CHECK(exif_orientation(std::vector<uint8_t>{0x89, 'P', 'N', 'G'}) == 1);
}
