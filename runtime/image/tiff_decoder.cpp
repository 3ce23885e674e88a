#include "runtime/image/tiff_decoder.h"

#include <tiffio.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <memory>

#include "runtime/error.h"

namespace ckjit::image::tiff {

namespace {

// The file in memory as libtiff's client I/O, and the first error libtiff reported on it.
struct Source {
  std::span<const uint8_t> bytes;
  uint64_t pos = 0;
  std::string error;
};

tmsize_t read_proc(thandle_t h, void* buf, tmsize_t n) {
  auto* s = static_cast<Source*>(h);
  if (n <= 0 || s->pos >= s->bytes.size()) return 0;
  const uint64_t k = std::min<uint64_t>(uint64_t(n), s->bytes.size() - s->pos);
  std::memcpy(buf, s->bytes.data() + s->pos, k);
  s->pos += k;
  return tmsize_t(k);
}
tmsize_t write_proc(thandle_t, void*, tmsize_t) { return -1; }
toff_t seek_proc(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<Source*>(h);
  const uint64_t base = whence == SEEK_SET ? 0 : whence == SEEK_CUR ? s->pos : s->bytes.size();
  if (whence != SEEK_SET && whence != SEEK_CUR && whence != SEEK_END) return toff_t(-1);
  s->pos = base + off;  // past the end is allowed (reads there return 0 bytes)
  return s->pos;
}
int close_proc(thandle_t) { return 0; }
toff_t size_proc(thandle_t h) { return static_cast<Source*>(h)->bytes.size(); }
int map_proc(thandle_t, void**, toff_t*) { return 0; }  // no mapping: every read goes through read_proc
void unmap_proc(thandle_t, void*, toff_t) {}

int on_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* s = static_cast<Source*>(user);
  if (s->error.empty()) {
    char msg[512];
    std::vsnprintf(msg, sizeof msg, fmt, ap);
    s->error = printable_ascii(std::string(module ? module : "libtiff") + ": " + msg);
  }
  return 1;  // handled: libtiff prints nothing
}
int on_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }  // warnings are not errors; silent

struct Closer {
  void operator()(TIFF* t) const { TIFFClose(t); }
};
using Tiff = std::unique_ptr<TIFF, Closer>;

Tiff open(Source& s, const std::string& name, size_t max_alloc) {
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  if (!opts) throw Error(name + ": out of memory opening the TIFF");
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts, tmsize_t(max_alloc));
  TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, &s);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, &s);
  // "rm": read only, never memory-mapped (the bytes are already in memory).
  Tiff t(TIFFClientOpenExt(name.c_str(), "rm", &s, read_proc, write_proc, seek_proc, close_proc, size_proc, map_proc,
                           unmap_proc, opts));
  TIFFOpenOptionsFree(opts);
  if (!t) throw Error(name + ": unreadable TIFF (" + (s.error.empty() ? "libtiff could not open it" : s.error) + ")");
  return t;
}

[[noreturn]] void fail(const Source& s, const std::string& name, int page, const std::string& what) {
  throw Error(name + ": TIFF page " + std::to_string(page + 1) + ": " + what + (s.error.empty() ? "" : " (" + s.error + ")"));
}

PageSize size_of(TIFF* t, const Source& s, const std::string& name, int page) {
  uint32_t w = 0, h = 0;
  if (!TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w) || !TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h)) fail(s, name, page, "no image size");
  char why[1024] = {};
  if (!TIFFRGBAImageOK(t, why)) fail(s, name, page, std::string("a layout ckjit cannot read: ") + printable_ascii(why));
  return {int64_t(w), int64_t(h)};
}

}  // namespace

std::vector<PageSize> page_sizes(std::span<const uint8_t> bytes, const std::string& name, size_t max_pages) {
  Source s{bytes, 0, {}};
  const Tiff t = open(s, name, size_t(64) << 20);
  std::vector<PageSize> pages;
  do {
    if (pages.size() == max_pages)
      throw Error(name + ": TIFF with more than " + std::to_string(max_pages) + " pages (split the file)");
    pages.push_back(size_of(t.get(), s, name, int(pages.size())));
  } while (TIFFReadDirectory(t.get()) == 1);
  // 0: no further directory; -1 (or an error logged): the next one is broken, which is not a page lost in silence.
  if (!s.error.empty()) fail(s, name, int(pages.size()), "unreadable directory");
  return pages;
}

std::vector<uint8_t> decode_rgb(std::span<const uint8_t> bytes, const std::string& name, int page, size_t max_alloc) {
  Source s{bytes, 0, {}};
  const Tiff t = open(s, name, max_alloc);
  if (page < 0 || TIFFSetDirectory(t.get(), tdir_t(page)) != 1) fail(s, name, page, "not in the file");
  const PageSize ps = size_of(t.get(), s, name, page);
  const size_t n = size_t(ps.width) * size_t(ps.height);
  std::vector<uint32_t> rgba(n);
  // ORIENTATION_TOPLEFT: rows top first whatever the file stores (libtiff flips per the Orientation tag).
  if (!TIFFReadRGBAImageOriented(t.get(), uint32_t(ps.width), uint32_t(ps.height), rgba.data(), ORIENTATION_TOPLEFT, 1) ||
      !s.error.empty())
    fail(s, name, page, "corrupt or truncated image data");
  std::vector<uint8_t> rgb(n * 3);
  for (size_t i = 0; i < n; ++i) {
    rgb[3 * i] = uint8_t(TIFFGetR(rgba[i])), rgb[3 * i + 1] = uint8_t(TIFFGetG(rgba[i])), rgb[3 * i + 2] = uint8_t(TIFFGetB(rgba[i]));
  }
  return rgb;
}

}  // namespace ckjit::image::tiff
