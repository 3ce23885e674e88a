#pragma once
// PDF pages as images the runtime's decoder accepts: poppler-cpp rasterizes a page at a given DPI
// and the pixels are wrapped as an uncompressed 24-bit BMP (runtime/image decodes BMP;
// BMP needs no compressor and is exact).
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ckjit::ocr {

// Pages of the PDF at path, or -1 with error set (not a PDF, damaged, encrypted, unreadable).
int pdf_page_count(const std::string& path, std::string& error);

// A BMP file of w x h pixels from rows of B, G, R bytes (stride bytes apart, top row first).
std::vector<uint8_t> encode_bmp(const uint8_t* bgr, int w, int h, size_t stride);

// The largest page image rendered (pixels), below the image decoder's own limit so that the
// refusal names the page and its DPI instead of allocating first.
constexpr int64_t kMaxPagePixels = int64_t(1) << 26;

// Renders pages; keeps the last document open, since the pages of one PDF come one after another.
class PdfRasterizer {
 public:
  PdfRasterizer();
  ~PdfRasterizer();
  // The page (1-based) of the PDF at path at dpi, as BMP bytes; throws ckjit::Error with the reason.
  // max_side > 0: at a lower DPI where the longest side would pass max_side pixels (*used_dpi says).
  std::vector<uint8_t> render_bmp(const std::string& path, int page, double dpi, int max_side = 0, double* used_dpi = nullptr);

 private:
  struct Open;
  std::unique_ptr<Open> open_;
};

}  // namespace ckjit::ocr
