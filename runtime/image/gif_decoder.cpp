#include "runtime/image/gif_decoder.h"

#include <gif_lib.h>

#include <array>
#include <cstring>
#include <memory>
#include <vector>

#include "runtime/error.h"
#include "runtime/image/limits.h"

namespace ckjit::image::gif {

namespace {

struct Source {
  std::span<const uint8_t> bytes;
  size_t pos = 0;
};

// giflib's input callback: a short read (the file is cut) makes giflib fail with a read error.
int read_bytes(GifFileType* g, GifByteType* out, int n) {
  auto* s = static_cast<Source*>(g->UserData);
  const size_t k = std::min(size_t(n < 0 ? 0 : n), s->bytes.size() - s->pos);
  std::memcpy(out, s->bytes.data() + s->pos, k);
  s->pos += k;
  return int(k);
}

struct Closer {
  void operator()(GifFileType* g) const {
    int err = 0;
    DGifCloseFile(g, &err);
  }
};
using Gif = std::unique_ptr<GifFileType, Closer>;

// giflib's reason; a failed read at the end of the data is named as the cut it is.
[[noreturn]] void fail(const std::string& name, int code, const Source& src) {
  const char* why = GifErrorString(code);
  const bool cut = code == D_GIF_ERR_READ_FAILED && src.pos == src.bytes.size();
  const std::string reason = cut ? "the file ends before the image does" : printable_ascii(why ? why : "unknown error");
  throw Error(name + ": corrupt or truncated GIF (giflib: " + reason + ")");
}

Gif open(Source& src, const std::string& name) {
  int err = 0;
  Gif g(DGifOpen(&src, read_bytes, &err));
  if (!g) fail(name, err, src);
  return g;
}

// A palette of 256 RGBA entries: the map's colours opaque, the rest transparent black (never drawn).
using Palette = std::array<std::array<uint8_t, 4>, 256>;
Palette palette_of(const ColorMapObject* map) {
  Palette p{};
  for (int i = 0; map && i < map->ColorCount && i < 256; ++i)
    p[size_t(i)] = {map->Colors[i].Red, map->Colors[i].Green, map->Colors[i].Blue, 255};
  return p;
}

// The rows of an interlaced frame come in four passes: every 8th row from 0, every 8th from 4,
// every 4th from 2, every 2nd from 1.
std::vector<int> row_order(int h, bool interlaced) {
  std::vector<int> rows;
  rows.reserve(size_t(h));
  if (!interlaced) {
    for (int y = 0; y < h; ++y) rows.push_back(y);
    return rows;
  }
  const int start[4] = {0, 4, 2, 1}, step[4] = {8, 8, 4, 2};
  for (int pass = 0; pass < 4; ++pass)
    for (int y = start[pass]; y < h; y += step[pass]) rows.push_back(y);
  return rows;
}

}  // namespace

Info info(std::span<const uint8_t> bytes, const std::string& name) {
  Source src{bytes};
  const Gif g = open(src, name);
  return Info{g->SWidth, g->SHeight};
}

Rgb8 decode_rgb(std::span<const uint8_t> bytes, const std::string& name, const DecodeLimits& limits) {
  Source src{bytes};
  const Gif g = open(src, name);
  check_pixels(name, g->SWidth, g->SHeight, limits);
  int transparent = -1;  // from the last graphic control extension before the frame
  for (;;) {
    GifRecordType type = UNDEFINED_RECORD_TYPE;
    if (DGifGetRecordType(g.get(), &type) == GIF_ERROR) fail(name, g->Error, src);
    if (type == TERMINATE_RECORD_TYPE) throw Error(name + ": GIF without an image (its trailer comes first)");
    if (type == EXTENSION_RECORD_TYPE) {
      int code = 0;
      GifByteType* block = nullptr;
      if (DGifGetExtension(g.get(), &code, &block) == GIF_ERROR) fail(name, g->Error, src);
      if (code == GRAPHICS_EXT_FUNC_CODE && block && block[0] == 4) transparent = (block[1] & 1) ? block[4] : -1;
      while (block)
        if (DGifGetExtensionNext(g.get(), &block) == GIF_ERROR) fail(name, g->Error, src);
      continue;
    }
    if (type != IMAGE_DESC_RECORD_TYPE) throw Error(name + ": GIF with an unknown block before the first image");
    break;
  }
  if (DGifGetImageDesc(g.get()) == GIF_ERROR) fail(name, g->Error, src);
  const GifImageDesc& d = g->Image;
  if (d.Left < 0 || d.Top < 0 || d.Width < 0 || d.Height < 0 || d.Left + d.Width > g->SWidth || d.Top + d.Height > g->SHeight)
    throw Error(name + ": corrupt GIF: its first frame (" + std::to_string(d.Width) + " x " + std::to_string(d.Height) + " at " +
                std::to_string(d.Left) + ", " + std::to_string(d.Top) + ") lies outside its " + std::to_string(g->SWidth) + " x " +
                std::to_string(g->SHeight) + " screen");
  const ColorMapObject* map = d.ColorMap ? d.ColorMap : g->SColorMap;
  if (!map) throw Error(name + ": corrupt GIF: its first frame has no colour table");
  Palette pal = palette_of(map);
  if (transparent >= 0) pal[size_t(transparent)][3] = 0;
  Rgb8 out;
  out.width = g->SWidth, out.height = g->SHeight;
  out.pixels.assign(size_t(out.width) * size_t(out.height) * 3, 0);
  // Outside the frame: the background colour (from the global table, index above 0 only) with red and
  // blue swapped, the bytes stb_image writes there; inside: the frame, transparent pixels left black.
  if (g->SBackGroundColor > 0 && (d.Width < g->SWidth || d.Height < g->SHeight)) {
    const auto bg = palette_of(g->SColorMap)[size_t(g->SBackGroundColor & 255)];
    for (size_t i = 0; i < out.pixels.size(); i += 3) out.pixels[i] = bg[2], out.pixels[i + 1] = bg[1], out.pixels[i + 2] = bg[0];
    for (int y = d.Top; d.Width > 0 && y < d.Top + d.Height; ++y)
      std::memset(&out.pixels[(size_t(y) * size_t(out.width) + size_t(d.Left)) * 3], 0, size_t(d.Width) * 3);
  }
  std::vector<GifPixelType> line(size_t(d.Width) + 1);
  for (const int y : row_order(d.Width > 0 ? d.Height : 0, d.Interlace)) {
    if (DGifGetLine(g.get(), line.data(), d.Width) == GIF_ERROR) fail(name, g->Error, src);
    uint8_t* dst = &out.pixels[(size_t(d.Top + y) * size_t(out.width) + size_t(d.Left)) * 3];
    for (int x = 0; x < d.Width; ++x, dst += 3) {
      const auto& c = pal[line[size_t(x)]];
      if (c[3]) dst[0] = c[0], dst[1] = c[1], dst[2] = c[2];
    }
  }
  return out;
}

}  // namespace ckjit::image::gif
