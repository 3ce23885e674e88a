#include "tools/ocr/pdf.h"

#include <poppler-document.h>
#include <poppler-global.h>
#include <poppler-image.h>
#include <poppler-page-renderer.h>
#include <poppler-page.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>

#include "runtime/error.h"

namespace ckjit::ocr {

namespace {

// poppler reports problems through a global callback (by default to stderr); they are kept and
// named in our own message instead, so a damaged PDF gives one clear error line.
thread_local std::string poppler_last;

void keep_poppler_message(const std::string& msg, void*) {
  if (!poppler_last.empty()) poppler_last += "; ";
  if (poppler_last.size() < 400) poppler_last += msg;
}

void install_poppler_callback() {
  static std::once_flag once;
  std::call_once(once, [] { poppler::set_debug_error_function(keep_poppler_message, nullptr); });
}

std::string with_detail(const std::string& what) { return poppler_last.empty() ? what : what + " (poppler: " + poppler_last + ")"; }

// Opens path; throws ckjit::Error for a file that is not a usable, unlocked PDF.
std::unique_ptr<poppler::document> open_pdf(const std::string& path) {
  install_poppler_callback();
  poppler_last.clear();
  std::unique_ptr<poppler::document> doc(poppler::document::load_from_file(path));
  if (!doc) throw Error(path + ": " + with_detail("cannot open as a PDF (damaged, not a PDF, or unreadable)"));
  if (doc->is_locked()) throw Error(path + ": the PDF is encrypted and needs a password");
  return doc;
}

void put16(std::vector<uint8_t>& b, size_t at, uint32_t v) { b[at] = uint8_t(v), b[at + 1] = uint8_t(v >> 8); }
void put32(std::vector<uint8_t>& b, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) b[at + i] = uint8_t(v >> (8 * i));
}

}  // namespace

int pdf_page_count(const std::string& path, std::string& error) {
  try {
    const int n = open_pdf(path)->pages();
    if (n < 1) throw Error(path + ": the PDF has no pages");
    return n;
  } catch (const Error& e) {
    error = e.what();
    return -1;
  }
}

std::vector<uint8_t> encode_bmp(const uint8_t* bgr, int w, int h, size_t stride) {
  const size_t row = (size_t(w) * 3 + 3) & ~size_t(3);  // BMP rows are padded to 4 bytes
  const size_t header = 14 + 40;
  std::vector<uint8_t> b(header + row * size_t(h), 0);
  b[0] = 'B', b[1] = 'M';
  put32(b, 2, uint32_t(b.size()));
  put32(b, 10, uint32_t(header));
  put32(b, 14, 40);  // BITMAPINFOHEADER
  put32(b, 18, uint32_t(w));
  put32(b, 22, uint32_t(h));  // positive height: rows bottom-up (the decoder refuses top-down BMPs)
  put16(b, 26, 1);
  put16(b, 28, 24);
  put32(b, 34, uint32_t(row * size_t(h)));
  for (int y = 0; y < h; ++y) std::memcpy(b.data() + header + row * size_t(h - 1 - y), bgr + stride * size_t(y), size_t(w) * 3);
  return b;
}

struct PdfRasterizer::Open {
  std::string path;
  std::unique_ptr<poppler::document> doc;
};

PdfRasterizer::PdfRasterizer() = default;
PdfRasterizer::~PdfRasterizer() = default;

std::vector<uint8_t> PdfRasterizer::render_bmp(const std::string& path, int page, double dpi, int max_side, double* used_dpi) {
  if (!open_ || open_->path != path) {
    open_.reset();
    auto doc = open_pdf(path);
    open_ = std::make_unique<Open>(Open{path, std::move(doc)});
  }
  poppler::document& doc = *open_->doc;
  const std::string where = path + " page " + std::to_string(page);
  if (page < 1 || page > doc.pages())
    throw Error(where + ": no such page (the PDF has " + std::to_string(doc.pages()) + ")");
  poppler_last.clear();
  std::unique_ptr<poppler::page> p(doc.create_page(page - 1));
  if (!p) throw Error(where + ": " + with_detail("cannot read the page"));
  const poppler::rectf box = p->page_rect(poppler::crop_box);
  // --max-side: the DPI lowered so that the longest side is at most max_side pixels.
  const double longest = std::max(box.width(), box.height());
  if (max_side > 0 && longest > 0) dpi = std::min(dpi, std::floor(max_side * 72.0 / longest * 1000.0) / 1000.0);
  if (used_dpi) *used_dpi = dpi;
  const double pw = std::ceil(box.width() * dpi / 72.0), ph = std::ceil(box.height() * dpi / 72.0);
  if (!(pw >= 1 && ph >= 1)) throw Error(where + ": the page has no area (" + std::to_string(box.width()) + " x " +
                                         std::to_string(box.height()) + " pt)");
  if (pw * ph > double(kMaxPagePixels))
    throw Error(where + ": at " + std::to_string(int(dpi)) + " dpi the page would be " + std::to_string(int64_t(pw)) + " x " +
                std::to_string(int64_t(ph)) + " pixels, above the limit of " + std::to_string(kMaxPagePixels) +
                " (lower --dpi)");
  poppler::page_renderer r;
  r.set_render_hint(poppler::page_renderer::antialiasing, true);
  r.set_render_hint(poppler::page_renderer::text_antialiasing, true);
  r.set_image_format(poppler::image::format_bgr24);
  const poppler::image img = r.render_page(p.get(), dpi, dpi);
  if (!img.is_valid() || img.width() < 1 || img.height() < 1) throw Error(where + ": " + with_detail("rendering failed"));
  if (img.format() != poppler::image::format_bgr24) throw Error(where + ": poppler returned an unexpected pixel format");
  return encode_bmp(reinterpret_cast<const uint8_t*>(img.const_data()), img.width(), img.height(), size_t(img.bytes_per_row()));
}

}  // namespace ckjit::ocr
