#include "runtime/image/jpeg_decoder.h"

#include <csetjmp>
#include <cstdio>  // jpeglib.h needs FILE declared first

#include <jpeglib.h>
// After jpeglib.h, which it needs: libjpeg's message codes and ERREXIT.
#include <jerror.h>

#include "runtime/error.h"
#include "runtime/image/limits.h"

namespace ckjit::image::jpeg {

namespace {

// A normal progressive file has about ten scans; thousands of tiny ones only burn CPU (libjpeg-turbo's
// documentation advises a cap for untrusted input).
constexpr int kMaxScans = 1000;

// libjpeg's error manager, extended with the jump target and the first message. The functions that
// run between setjmp and a longjmp hold no C++ object with a destructor.
struct Context {
  jpeg_error_mgr err{};
  jpeg_progress_mgr progress{};
  std::jmp_buf jump{};
  char message[JMSG_LENGTH_MAX] = {};
  jpeg_decompress_struct cinfo{};
};

void on_error(j_common_ptr c) {
  auto* ctx = reinterpret_cast<Context*>(c->err);  // err is Context's first member
  (*c->err->format_message)(c, ctx->message);
  std::longjmp(ctx->jump, 1);
}
void on_message(j_common_ptr, int) {}  // warnings (corrupt data libjpeg works around) are not printed

// jpeg_mem_src's own refill invents an end-of-image marker and decodes the rest as grey; a cut file
// is an error here instead.
boolean refill_at_end(j_decompress_ptr c) {
  ERREXIT(c, JERR_INPUT_EOF);
  return FALSE;
}

void count_scans(j_common_ptr c) {
  auto* d = reinterpret_cast<j_decompress_ptr>(c);
  if (d->input_scan_number > kMaxScans) {
    auto* ctx = reinterpret_cast<Context*>(c->err);
    std::snprintf(ctx->message, sizeof ctx->message, "more than %d scans", kMaxScans);
    std::longjmp(ctx->jump, 1);
  }
}

[[noreturn]] void fail(const Context& ctx, const std::string& name) {
  throw Error(name + ": corrupt or truncated JPEG (libjpeg-turbo: " + printable_ascii(ctx.message) + ")");
}

// Sets up `ctx` to read `bytes`; call under setjmp.
void open(Context& ctx, std::span<const uint8_t> bytes) {
  jpeg_create_decompress(&ctx.cinfo);
  jpeg_mem_src(&ctx.cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  ctx.cinfo.src->fill_input_buffer = refill_at_end;
  ctx.progress.progress_monitor = count_scans;
  ctx.cinfo.progress = &ctx.progress;
  jpeg_read_header(&ctx.cinfo, TRUE);
}

void init_errors(Context& ctx) {
  ctx.cinfo.err = jpeg_std_error(&ctx.err);
  ctx.err.error_exit = on_error;
  ctx.err.emit_message = on_message;
}

uint8_t times_k(uint8_t v, uint8_t k) { return uint8_t((unsigned(v) * k + 127) / 255); }  // v * k / 255, rounded

// The decode proper; false (ctx.message says why) when libjpeg gave up. Nothing here has a destructor
// that a longjmp could skip: `out` lives in the caller.
bool run(Context& ctx, std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits, Rgb8& out) {
  init_errors(ctx);
  if (setjmp(ctx.jump)) return false;
  open(ctx, bytes);
  jpeg_decompress_struct& ci = ctx.cinfo;
  check_pixels(name, ci.image_width, ci.image_height, limits);  // throws before any allocation for pixels
  // Working memory (a progressive file's coefficients: 2 bytes per component sample) is bounded by
  // the header's size; above it libjpeg fails rather than allocate.
  ci.mem->max_memory_to_use = long(max_decode_alloc(ci.image_width, ci.image_height, 0));  // the file is read in place
  const bool cmyk = ci.num_components == 4;  // libjpeg turns YCCK into CMYK itself
  ci.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  ci.dct_method = JDCT_ISLOW;
  ci.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&ci);
  const int w = int(ci.output_width), h = int(ci.output_height), n = ci.output_components;
  out.width = w, out.height = h;
  out.pixels.resize(size_t(w) * size_t(h) * 3);
  JSAMPARRAY row = (*ci.mem->alloc_sarray)(reinterpret_cast<j_common_ptr>(&ci), JPOOL_IMAGE, JDIMENSION(w) * JDIMENSION(n), 1);
  while (ci.output_scanline < ci.output_height) {
    uint8_t* dst = out.pixels.data() + size_t(ci.output_scanline) * size_t(w) * 3;
    if (!cmyk) {
      JSAMPROW rows[1] = {dst};
      jpeg_read_scanlines(&ci, rows, 1);
      continue;
    }
    jpeg_read_scanlines(&ci, row, 1);
    // Adobe's CMYK is stored inverted (255 is no ink): the light reaching the eye is c * k.
    for (int x = 0; x < w; ++x) {
      const uint8_t* p = row[0] + size_t(x) * 4;
      dst[x * 3] = times_k(p[0], p[3]), dst[x * 3 + 1] = times_k(p[1], p[3]), dst[x * 3 + 2] = times_k(p[2], p[3]);
    }
  }
  return true;  // the rest of the file (past the last row) is not read: stb_image ignored it too
}

// Destroys the decompressor whichever way run() ended.
struct Guard {
  Context& ctx;
  ~Guard() { jpeg_destroy_decompress(&ctx.cinfo); }
};

}  // namespace

Info info(std::span<const uint8_t> bytes, const std::string& name) {
  Context ctx;
  init_errors(ctx);
  Guard guard{ctx};
  if (setjmp(ctx.jump)) fail(ctx, name);
  open(ctx, bytes);
  return Info{int(ctx.cinfo.image_width), int(ctx.cinfo.image_height), ctx.cinfo.num_components};
}

Rgb8 decode_rgb(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits) {
  Context ctx;
  Guard guard{ctx};
  Rgb8 out;
  if (!run(ctx, bytes, name, limits, out)) fail(ctx, name);
  if (out.width < 1 || out.height < 1) throw Error(name + ": JPEG without pixels");
  return out;
}

}  // namespace ckjit::image::jpeg
