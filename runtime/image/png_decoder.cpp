#include "runtime/image/png_decoder.h"

#include <png.h>

#include <cstdio>
#include <cstring>
#include <vector>

#include "runtime/error.h"
#include "runtime/image/limits.h"

namespace ckjit::image::png {

namespace {

// An ancillary chunk (text, ICC profile, ...) may take at most this much memory; ckjit reads none.
constexpr png_alloc_size_t kMaxChunkBytes = 8 << 20;

// The file in memory and the first error libpng reported on it.
struct Context {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
  char message[256] = {};
  png_structp png = nullptr;
  png_infop info = nullptr;
  ~Context() { png_destroy_read_struct(&png, info ? &info : nullptr, nullptr); }
};

void on_error(png_structp p, png_const_charp msg) {
  auto* ctx = static_cast<Context*>(png_get_error_ptr(p));
  std::snprintf(ctx->message, sizeof ctx->message, "%s", msg ? msg : "unknown error");
  png_longjmp(p, 1);
}
void on_warning(png_structp, png_const_charp) {}  // e.g. a bad CRC on an ancillary chunk: not printed

// A read past the end is an error (libpng asks for exactly the bytes a chunk says it has).
void read_bytes(png_structp p, png_bytep out, size_t n) {
  auto* ctx = static_cast<Context*>(png_get_io_ptr(p));
  if (n > ctx->bytes.size() - ctx->pos) png_error(p, "the file ends before the image does");
  std::memcpy(out, ctx->bytes.data() + ctx->pos, n);
  ctx->pos += n;
}

// Creates libpng's structs and reads up to IHDR and the chunks before the image data; call under setjmp.
void open(Context& ctx, const DecodeLimits& limits) {
  png_set_read_fn(ctx.png, &ctx, read_bytes);
  png_set_user_limits(ctx.png, png_uint_32(limits.max_side), png_uint_32(limits.max_side));
  png_set_chunk_malloc_max(ctx.png, kMaxChunkBytes);
  // stb_image checks neither CRCs nor the zlib checksum: files it (and so llama.cpp) accepts stay accepted.
  png_set_crc_action(ctx.png, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
  png_set_option(ctx.png, PNG_IGNORE_ADLER32, PNG_OPTION_ON);
  png_read_info(ctx.png, ctx.info);
}

bool create(Context& ctx, std::span<const uint8_t> bytes) {
  ctx.bytes = bytes;
  ctx.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, on_error, on_warning);
  if (ctx.png) ctx.info = png_create_info_struct(ctx.png);
  return ctx.png && ctx.info;
}

[[noreturn]] void fail(const Context& ctx, const std::string& name) {
  throw Error(name + ": corrupt or truncated PNG (libpng: " + printable_ascii(ctx.message) + ")");
}

// The transforms to 8-bit RGB, then every row; false (ctx.message says why) when libpng gave up.
// `rows` and `out` live in the caller, so a longjmp skips no destructor.
bool run(Context& ctx, const std::string& name, const DecodeLimits& limits, Rgb8& out, std::vector<png_bytep>& rows) {
  if (setjmp(png_jmpbuf(ctx.png))) return false;
  open(ctx, limits);
  png_structp p = ctx.png;
  const png_uint_32 w = png_get_image_width(p, ctx.info), h = png_get_image_height(p, ctx.info);
  check_pixels(name, w, h, limits);  // before any row is allocated or inflated
  const int type = png_get_color_type(p, ctx.info);
  if (png_get_bit_depth(p, ctx.info) == 16) png_set_strip_16(p);  // the high byte, as stb keeps it
  if (type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(p);
  if (type == PNG_COLOR_TYPE_GRAY || type == PNG_COLOR_TYPE_GRAY_ALPHA) {
    png_set_expand_gray_1_2_4_to_8(p);
    png_set_gray_to_rgb(p);
  }
  // An alpha channel, or the one a palette's tRNS expands to, is stripped: the colours stay as stored.
  png_set_strip_alpha(p);
  png_set_interlace_handling(p);
  png_read_update_info(p, ctx.info);
  if (png_get_rowbytes(p, ctx.info) != size_t(w) * 3) png_error(p, "unexpected row size after the transforms to RGB");
  out.width = int(w), out.height = int(h);
  out.pixels.resize(size_t(w) * size_t(h) * 3);
  rows.resize(h);
  for (size_t y = 0; y < h; ++y) rows[y] = out.pixels.data() + y * size_t(w) * 3;
  png_read_image(p, rows.data());
  return true;  // the chunks after the image data are not read: stb_image ignored them too
}

}  // namespace

Info info(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits) {
  Context ctx;
  if (!create(ctx, bytes)) throw Error(name + ": out of memory for the PNG decoder");
  if (setjmp(png_jmpbuf(ctx.png))) fail(ctx, name);
  open(ctx, limits);
  const bool palette = png_get_color_type(ctx.png, ctx.info) == PNG_COLOR_TYPE_PALETTE;
  const int channels = palette ? 3 : int(png_get_channels(ctx.png, ctx.info));
  return Info{int(png_get_image_width(ctx.png, ctx.info)), int(png_get_image_height(ctx.png, ctx.info)), channels};
}

Rgb8 decode_rgb(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits) {
  Context ctx;
  if (!create(ctx, bytes)) throw Error(name + ": out of memory for the PNG decoder");
  Rgb8 out;
  std::vector<png_bytep> rows;
  if (!run(ctx, name, limits, out, rows)) fail(ctx, name);
  return out;
}

}  // namespace ckjit::image::png
