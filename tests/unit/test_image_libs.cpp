// PNG, GIF and JPEG through libpng, giflib and libjpeg-turbo (runtime/image/*_decoder.cpp): the same
// bytes as stb_image, which llama.cpp's mtmd decodes with (JPEG within 1 of stb's IDCT), on every
// variant of tests/fixtures/decoder-variants (make.py there); cut files are clear errors; a header
// over the limits is refused before any pixel is decoded.
#include <doctest/doctest.h>

#include <stb_image.h>  // Debian's libstb.so: the reference decoder
#include <stb_image_write.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/image/image.h"
#include "runtime/image/jpeg_decoder.h"
#include "tests/unit/gif_writer.h"
#include "tests/unit/slurp.h"

using namespace ckjit;
using namespace ckjit::image;

namespace {

std::vector<uint8_t> bytes_of(const std::filesystem::path& p) {
  const std::string s = test_io::slurp(p);
  REQUIRE(!s.empty());
  return {s.begin(), s.end()};
}

std::string fixtures() { return std::string(CKJIT_FIXTURES_DIR); }

// The largest difference between `img` and stb_image's RGB decode of `b`, or -1 if the sizes differ.
int max_diff_from_stb(const std::vector<uint8_t>& b, const Rgb8& img) {
  int w = 0, h = 0, c = 0;
  stbi_uc* ref = stbi_load_from_memory(b.data(), int(b.size()), &w, &h, &c, 3);
  REQUIRE(ref != nullptr);
  int most = w == img.width && h == img.height ? 0 : -1;
  for (size_t i = 0; most >= 0 && i < img.pixels.size(); ++i) most = std::max(most, std::abs(int(ref[i]) - int(img.pixels[i])));
  stbi_image_free(ref);
  return most;
}

std::string error_of(const std::vector<uint8_t>& b, const std::string& name, const DecodeLimits& limits = {}) {
  try {
    (void)decode(b, name, limits);
  } catch (const Error& e) {
    return e.what();
  }
  return "decoded";
}

void append(void* ctx, void* data, int size) {
  auto* v = static_cast<std::vector<uint8_t>*>(ctx);
  v->insert(v->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
}

}  // namespace

TEST_SUITE("image") {

TEST_CASE("image: PNG and GIF variants decode to stb_image's bytes and JPEG (grey and CMYK) to within 1 of them") {
  int png = 0, gif = 0, jpeg = 0;
  for (const auto& e : std::filesystem::directory_iterator(fixtures() + "/decoder-variants")) {
    const std::string ext = e.path().extension().string();
    if (ext != ".png" && ext != ".gif" && ext != ".jpg") continue;
    CAPTURE(e.path().filename().string());
    const std::vector<uint8_t> b = bytes_of(e.path());
    const Rgb8 img = decode(b, e.path().string());
    // 16-bit samples keep their high byte, palettes (with tRNS) and 1/2/4-bit grey expand, alpha is
    // dropped, gamma ignored; a GIF's sub-frame sits on the screen as stb draws it.
    CHECK(max_diff_from_stb(b, img) == (ext == ".jpg" ? 1 : 0));
    (ext == ".png" ? png : ext == ".gif" ? gif : jpeg)++;
  }
  CHECK(png == 11);
  CHECK(gif == 4);
  CHECK(jpeg == 2);
}

TEST_CASE("image: a CMYK JPEG becomes RGB as stb_image makes it (Adobe's inverted CMYK: c * k / 255)") {
  const std::vector<uint8_t> b = bytes_of(fixtures() + "/decoder-variants/cmyk-24x16.jpg");
  const Header hd = read_header(b, "cmyk.jpg");
  CHECK(hd.channels == 4);
  const Rgb8 img = decode(b, "cmyk.jpg");
  CHECK((img.width == 24 && img.height == 16));
  CHECK(max_diff_from_stb(b, img) <= 1);
}

TEST_CASE("image: a progressive JPEG decodes to the baseline's pixels") {
  const std::string dir = fixtures() + "/jpeg-variants/";
  const Rgb8 base = decode(bytes_of(dir + "baseline-96x64.jpg"), "b.jpg");
  const Rgb8 prog = decode(bytes_of(dir + "progressive-96x64.jpg"), "p.jpg");
  CHECK(prog.pixels == base.pixels);
  CHECK(max_diff_from_stb(bytes_of(dir + "progressive-96x64.jpg"), prog) <= 2);  // stb's IDCT rounds otherwise
}

TEST_CASE("image: a cut JPEG / PNG / GIF is a clear error at every length") {
  std::vector<uint8_t> png;
  std::vector<uint8_t> rgb(48 * 32 * 3);
  for (size_t i = 0; i < rgb.size(); ++i) rgb[i] = uint8_t(i * 7 % 253);
  REQUIRE(stbi_write_png_to_func(append, &png, 48, 32, 3, rgb.data(), 48 * 3));
  const std::string g = gif_test::make_gif(48, 32, {std::vector<uint8_t>(rgb.begin(), rgb.begin() + 48 * 32)});
  struct Case {
    std::vector<uint8_t> bytes;
    const char* message;
  };
  const std::vector<Case> cases = {{bytes_of(fixtures() + "/jpeg-variants/baseline-96x64.jpg"), "corrupt or truncated JPEG"},
                                   {bytes_of(fixtures() + "/jpeg-variants/progressive-96x64.jpg"), "corrupt or truncated JPEG"},
                                   {png, "corrupt or truncated PNG"},
                                   {std::vector<uint8_t>(g.begin(), g.end()), "corrupt or truncated GIF"}};
  for (const Case& c : cases) {
    CAPTURE(c.message);
    // Half the file: the decoders' own message, libjpeg's "Premature end" among them.
    const std::vector<uint8_t> half(c.bytes.begin(), c.bytes.begin() + long(c.bytes.size() / 2));
    CHECK(error_of(half, "cut").find(c.message) != std::string::npos);
    // Every other length: an Error or (cut in the trailer only) the whole image, never a crash.
    for (size_t n = 1; n < c.bytes.size(); ++n) {
      const std::string r = error_of(std::vector<uint8_t>(c.bytes.begin(), c.bytes.begin() + long(n)), "cut");
      if (r != "decoded") CHECK(r.rfind("cut: ", 0) == 0);
    }
  }
}

TEST_CASE("image: a JPEG whose header claims more pixels than the limit is refused before decoding") {
  const std::vector<uint8_t> b = bytes_of(fixtures() + "/jpeg-variants/baseline-96x64.jpg");
  DecodeLimits small;
  small.max_pixels = 96 * 64 - 1;
  CHECK(error_of(b, "small.jpg", small).find("small.jpg: image header claims 96 x 64 pixels, above the limit of 6143") != std::string::npos);
  // The decoder checks the header libjpeg read itself (not only image.cpp's SOF scan).
  CHECK_THROWS_WITH_AS(jpeg::decode_rgb(b, "direct.jpg", small), doctest::Contains("claims 96 x 64"), Error);
  // A frame header claiming 60000 x 60000 (the SOF0's height and width): refused at once.
  std::vector<uint8_t> huge = b;
  size_t sof = 2;
  while (sof + 9 < huge.size() && !(huge[sof] == 0xff && huge[sof + 1] == 0xc0)) sof += 2 + size_t(huge[sof + 2] << 8 | huge[sof + 3]);
  REQUIRE(huge[sof + 1] == 0xc0);
  huge[sof + 5] = huge[sof + 7] = 60000 >> 8;
  huge[sof + 6] = huge[sof + 8] = 60000 & 255;
  CHECK(error_of(huge, "huge.jpg").find("huge.jpg: image header claims 60000 x 60000 pixels") != std::string::npos);
}

}  // TEST_SUITE
