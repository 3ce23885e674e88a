#include "tests/unit/image_writers.h"

#include <tiffio.h>
#include <unistd.h>
#include <webp/encode.h>
#include <webp/mux.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include "tests/unit/slurp.h"

namespace image_test {

std::vector<uint8_t> pattern(int w, int h, int seed) {
  std::vector<uint8_t> p(size_t(w) * size_t(h) * 3);
  for (int y = 0; y < h; ++y)
    for (int x = 0; x < w; ++x)
      for (int c = 0; c < 3; ++c) p[(size_t(y) * size_t(w) + size_t(x)) * 3 + size_t(c)] = uint8_t(x * 7 + y * 13 + c * 71 + seed * 31);
  return p;
}

std::string make_tiff(const std::vector<TiffPage>& pages) {
  // libtiff writes files; a temp file is the simplest sink.
  const std::string path = (std::filesystem::temp_directory_path() / ("ckjit_tiff_" + std::to_string(::getpid()) + ".tif")).string();
  TIFF* t = TIFFOpen(path.c_str(), "w");
  if (!t) throw std::runtime_error("TIFFOpen for writing failed");
  for (const TiffPage& pg : pages) {
    const int spp = pg.grey ? 1 : 3;
    TIFFSetField(t, TIFFTAG_IMAGEWIDTH, uint32_t(pg.width));
    TIFFSetField(t, TIFFTAG_IMAGELENGTH, uint32_t(pg.height));
    TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, uint16_t(spp));
    TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, uint16_t(pg.bits));
    TIFFSetField(t, TIFFTAG_PHOTOMETRIC, uint16_t(pg.grey ? PHOTOMETRIC_MINISBLACK : PHOTOMETRIC_RGB));
    TIFFSetField(t, TIFFTAG_PLANARCONFIG, uint16_t(PLANARCONFIG_CONTIG));
    TIFFSetField(t, TIFFTAG_COMPRESSION, pg.compression);
    TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, uint32_t(7));
    if (pages.size() > 1) TIFFSetField(t, TIFFTAG_SUBFILETYPE, uint32_t(FILETYPE_PAGE));
    const size_t bps = size_t(pg.bits / 8);
    std::vector<uint8_t> row(size_t(pg.width) * size_t(spp) * bps);
    for (int y = 0; y < pg.height; ++y) {
      for (int x = 0; x < pg.width; ++x)
        for (int c = 0; c < spp; ++c) {
          const uint8_t v = pg.rgb[(size_t(y) * size_t(pg.width) + size_t(x)) * 3 + size_t(c)];
          const size_t at = (size_t(x) * size_t(spp) + size_t(c)) * bps;
          if (bps == 1) row[at] = v;
          else row[at] = v, row[at + 1] = v;  // v * 257 in either byte order
        }
      if (TIFFWriteScanline(t, row.data(), uint32_t(y), 0) < 0) throw std::runtime_error("TIFFWriteScanline failed");
    }
    if (!TIFFWriteDirectory(t)) throw std::runtime_error("TIFFWriteDirectory failed");
  }
  TIFFClose(t);
  std::string bytes = test_io::slurp(path);
  std::filesystem::remove(path);
  return bytes;
}

namespace {
std::string take(uint8_t* out, size_t n) {
  if (!out || n == 0) throw std::runtime_error("WebP encoding failed");
  std::string s(reinterpret_cast<const char*>(out), n);
  WebPFree(out);
  return s;
}
}  // namespace

std::string make_webp_lossless(const std::vector<uint8_t>& rgb, int w, int h) {
  uint8_t* out = nullptr;
  const size_t n = WebPEncodeLosslessRGB(rgb.data(), w, h, w * 3, &out);
  return take(out, n);
}

std::string make_webp_lossy(const std::vector<uint8_t>& rgb, int w, int h, float quality) {
  uint8_t* out = nullptr;
  const size_t n = WebPEncodeRGB(rgb.data(), w, h, w * 3, quality, &out);
  return take(out, n);
}

std::string make_webp_rgba(const std::vector<uint8_t>& rgba, int w, int h) {
  // exact: keep the RGB under transparent pixels (the encoder may change it otherwise).
  WebPConfig cfg;
  WebPPicture pic;
  if (!WebPConfigInit(&cfg) || !WebPPictureInit(&pic)) throw std::runtime_error("libwebp init failed");
  cfg.lossless = 1, cfg.exact = 1;
  pic.use_argb = 1, pic.width = w, pic.height = h;
  WebPMemoryWriter wr;
  WebPMemoryWriterInit(&wr);
  pic.writer = WebPMemoryWrite, pic.custom_ptr = &wr;
  if (!WebPPictureImportRGBA(&pic, rgba.data(), w * 4) || !WebPEncode(&cfg, &pic)) throw std::runtime_error("WebP RGBA encoding failed");
  WebPPictureFree(&pic);
  return take(wr.mem, wr.size);
}

std::string make_webp_animation(const std::vector<std::vector<uint8_t>>& frames, int w, int h) {
  WebPAnimEncoderOptions ao;
  if (!WebPAnimEncoderOptionsInit(&ao)) throw std::runtime_error("libwebpmux init failed");
  WebPAnimEncoder* enc = WebPAnimEncoderNew(w, h, &ao);
  WebPConfig cfg;
  WebPConfigInit(&cfg);
  cfg.lossless = 1;
  int ts = 0;
  for (const auto& f : frames) {
    WebPPicture pic;
    WebPPictureInit(&pic);
    pic.use_argb = 1, pic.width = w, pic.height = h;
    if (!WebPPictureImportRGB(&pic, f.data(), w * 3) || !WebPAnimEncoderAdd(enc, &pic, ts, &cfg))
      throw std::runtime_error("WebP frame encoding failed");
    WebPPictureFree(&pic);
    ts += 100;
  }
  WebPAnimEncoderAdd(enc, nullptr, ts, nullptr);
  WebPData data;
  WebPDataInit(&data);
  if (!WebPAnimEncoderAssemble(enc, &data)) throw std::runtime_error("WebP animation assembly failed");
  WebPAnimEncoderDelete(enc);
  std::string s(reinterpret_cast<const char*>(data.bytes), data.size);
  WebPDataClear(&data);
  return s;
}

}  // namespace image_test
