// Generates the committed test images: assets/sample-page.png (an OCR demo page, 816x1056) and the
// vision fixtures in tests/fixtures/vision/images/ (gradients, shapes, text; PNG grey/RGB/RGBA, JPEG).
// Deterministic (no clocks, no randomness); rerun with `bash tools/make_images.sh` from anywhere.
#include <stb_image.h>
#include <stb_image_write.h>
#include <stb_truetype.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

// ---- images ------------------------------------------------------------------------------------

struct Rgb {
  uint8_t r, g, b;
};

// Everything is drawn in RGB; grey and RGBA outputs are derived at save time.
struct Image {
  int w = 0, h = 0;
  std::vector<uint8_t> px;  // w*h*3
  Image(int w_, int h_, Rgb fill) : w(w_), h(h_), px(size_t(w_) * h_ * 3) {
    for (size_t i = 0; i < px.size(); i += 3) px[i] = fill.r, px[i + 1] = fill.g, px[i + 2] = fill.b;
  }
  uint8_t* at(int x, int y) { return &px[(size_t(y) * w + x) * 3]; }
};

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "make_images: %s\n", msg.c_str());
  std::exit(1);
}

uint8_t mix(uint8_t bg, uint8_t fg, int a) { return uint8_t((bg * (255 - a) + fg * a + 127) / 255); }

// Coverage-weighted blend, so anti-aliased glyphs and shape edges come out grey-levelled.
void blend(Image& im, int x, int y, Rgb c, int a) {
  if (x < 0 || y < 0 || x >= im.w || y >= im.h || a <= 0) return;
  uint8_t* p = im.at(x, y);
  p[0] = mix(p[0], c.r, a), p[1] = mix(p[1], c.g, a), p[2] = mix(p[2], c.b, a);
}

void fill_rect(Image& im, int x0, int y0, int x1, int y1, Rgb c) {
  for (int y = y0; y < y1; ++y)
    for (int x = x0; x < x1; ++x) blend(im, x, y, c, 255);
}

// Edge pixels get partial coverage from their distance to the rim (one-pixel ramp).
void fill_circle(Image& im, float cx, float cy, float r, Rgb c) {
  for (int y = int(cy - r - 1); y <= int(cy + r + 1); ++y)
    for (int x = int(cx - r - 1); x <= int(cx + r + 1); ++x) {
      float d = std::hypot(x + 0.5f - cx, y + 0.5f - cy);
      float cover = std::clamp(r - d + 0.5f, 0.0f, 1.0f);
      blend(im, x, y, c, int(std::lround(cover * 255)));
    }
}

// Smooth, position-dependent colours: every channel varies, so a channel swap or a transposed
// resize shows up as a pixel mismatch in the tests.
void fill_gradient(Image& im, int seed) {
  for (int y = 0; y < im.h; ++y)
    for (int x = 0; x < im.w; ++x) {
      float u = im.w > 1 ? float(x) / (im.w - 1) : 0.0f;
      float v = im.h > 1 ? float(y) / (im.h - 1) : 0.0f;
      uint8_t* p = im.at(x, y);
      p[0] = uint8_t(std::lround(40 + 200 * u));
      p[1] = uint8_t(std::lround(30 + 190 * v));
      p[2] = uint8_t(std::lround(127.5f + 110 * std::sin(3.0f * (u + v) + seed)));
    }
}

Image downsample2x(const Image& src) {
  Image dst(src.w / 2, src.h / 2, {0, 0, 0});
  for (int y = 0; y < dst.h; ++y)
    for (int x = 0; x < dst.w; ++x)
      for (int c = 0; c < 3; ++c) {
        auto s = [&](int dx, int dy) { return src.px[(size_t(2 * y + dy) * src.w + 2 * x + dx) * 3 + c]; };
        dst.at(x, y)[c] = uint8_t((s(0, 0) + s(1, 0) + s(0, 1) + s(1, 1) + 2) / 4);
      }
  return dst;
}

// Rec. 601 luma, integer-rounded so the grey output is reproducible bit for bit.
std::vector<uint8_t> to_grey(const Image& im) {
  std::vector<uint8_t> g(size_t(im.w) * im.h);
  for (size_t i = 0; i < g.size(); ++i)
    g[i] = uint8_t((299 * im.px[3 * i] + 587 * im.px[3 * i + 1] + 114 * im.px[3 * i + 2] + 500) / 1000);
  return g;
}

// ---- text --------------------------------------------------------------------------------------

struct Font {
  std::vector<unsigned char> data;  // stbtt keeps pointers into this, so it must outlive `info`
  stbtt_fontinfo info{};
};

Font load_font(const std::string& path) {
  Font f;
  std::ifstream in(path, std::ios::binary);
  f.data.assign(std::istreambuf_iterator<char>(in), {});
  if (f.data.empty() || !stbtt_InitFont(&f.info, f.data.data(), stbtt_GetFontOffsetForIndex(f.data.data(), 0)))
    die("cannot load font " + path);
  return f;
}

// Enough UTF-8 for the em/en dashes in the page text.
std::vector<int> utf8(const std::string& s) {
  std::vector<int> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = s[i];
    int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    int cp = n == 1 ? c : c & (0xFF >> (n + 1));
    for (int k = 1; k < n && i + k < s.size(); ++k) cp = (cp << 6) | (s[i + k] & 0x3F);
    out.push_back(cp);
    i += n;
  }
  return out;
}

// `px` is the em size in pixels (11 pt at 96 dpi is about 14.7 px), as a word processor sets it.
float text_width(const Font& f, float px, const std::string& s) {
  float scale = stbtt_ScaleForMappingEmToPixels(&f.info, px);
  std::vector<int> cps = utf8(s);
  float w = 0;
  for (size_t i = 0; i < cps.size(); ++i) {
    int adv, lsb;
    stbtt_GetCodepointHMetrics(&f.info, cps[i], &adv, &lsb);
    w += adv * scale;
    if (i + 1 < cps.size()) w += scale * stbtt_GetCodepointKernAdvance(&f.info, cps[i], cps[i + 1]);
  }
  return w;
}

// Glyphs are placed at fractional x (subpixel shift) so spacing stays even at small sizes.
void draw_text(Image& im, const Font& f, float px, float x, int baseline, const std::string& s, Rgb ink) {
  float scale = stbtt_ScaleForMappingEmToPixels(&f.info, px);
  std::vector<int> cps = utf8(s);
  std::vector<unsigned char> bmp;
  for (size_t i = 0; i < cps.size(); ++i) {
    float shift = x - std::floor(x);
    int x0, y0, x1, y1;
    stbtt_GetCodepointBitmapBoxSubpixel(&f.info, cps[i], scale, scale, shift, 0, &x0, &y0, &x1, &y1);
    int gw = x1 - x0, gh = y1 - y0;
    if (gw > 0 && gh > 0) {
      bmp.assign(size_t(gw) * gh, 0);
      stbtt_MakeCodepointBitmapSubpixel(&f.info, bmp.data(), gw, gh, gw, scale, scale, shift, 0, cps[i]);
      for (int gy = 0; gy < gh; ++gy)
        for (int gx = 0; gx < gw; ++gx)
          blend(im, int(std::floor(x)) + x0 + gx, baseline + y0 + gy, ink, bmp[size_t(gy) * gw + gx]);
    }
    int adv, lsb;
    stbtt_GetCodepointHMetrics(&f.info, cps[i], &adv, &lsb);
    x += adv * scale;
    if (i + 1 < cps.size()) x += scale * stbtt_GetCodepointKernAdvance(&f.info, cps[i], cps[i + 1]);
  }
}

// Greedy word wrap: the page is ragged-right, like most memos, so no justification is needed.
std::vector<std::string> wrap(const Font& f, float px, const std::string& text, float max_w) {
  std::vector<std::string> lines;
  std::string line, word;
  auto flush_word = [&] {
    if (word.empty()) return;
    std::string trial = line.empty() ? word : line + " " + word;
    if (!line.empty() && text_width(f, px, trial) > max_w) {
      lines.push_back(line);
      line = word;
    } else {
      line = trial;
    }
    word.clear();
  };
  for (char c : text) c == ' ' ? flush_word() : word.push_back(c);
  flush_word();
  if (!line.empty()) lines.push_back(line);
  return lines;
}

struct Fonts {
  Font serif, serif_bold, sans, sans_bold;
};

// ---- the sample page ---------------------------------------------------------------------------

constexpr Rgb kBlack{0, 0, 0}, kInk{28, 28, 28}, kGrey{96, 96, 96}, kRule{120, 120, 120}, kWhite{255, 255, 255};

const char* const kParagraphs[] = {
    "During the third quarter the field operations team completed 412 scheduled site visits across the "
    "northern region, an increase of nine percent over the same period last year. Most of the additional "
    "work came from the two pumping stations that were brought back into service in July after their winter "
    "refurbishment. Crews reported fewer access problems than expected, largely because the new booking "
    "system gave landowners more notice of each visit.",
    "Equipment reliability remained the main concern. The older generators at Ashford and Millbrook needed "
    "repeated attention, and together they accounted for almost half of all unplanned repairs. Replacement "
    "units have been ordered and should arrive before the end of November. Until then, the team will keep a "
    "spare set of filters and belts at each site so that small faults can be fixed on the first visit.",
    "Staffing was stable. Two technicians completed their safety certification in August, and one apprentice "
    "joined the Millbrook crew. Overtime fell to six percent of total hours, down from eleven percent in the "
    "second quarter, which suggests that the revised rota is working as intended.",
    "The table below summarises activity by site. Uptime is the share of scheduled operating hours during "
    "which each station was available. Figures for October will be included in the next report.",
};

// Visits sum to the 412 quoted above; Ashford + Millbrook repairs are about half the total.
const char* const kTable[][4] = {
    {"Site", "Visits", "Repairs", "Uptime (%)"},
    {"Ashford", "118", "14", "94.8"},
    {"Millbrook", "104", "12", "95.6"},
    {"Carlow Ridge", "96", "16", "98.9"},
    {"Eastfield", "94", "11", "99.3"},
};

constexpr int kPageW = 816, kPageH = 1056, kMargin = 72;

// Thin grid; numeric columns right-aligned as in a spreadsheet export. Returns the y below it.
int draw_table(Image& im, const Fonts& F, int top) {
  const float px = 14.0f;
  const int row_h = 28, col_w[] = {220, 120, 120, 140};
  int table_w = 0;
  for (int w : col_w) table_w += w;
  const int left = kMargin, rows = int(std::size(kTable));
  fill_rect(im, left, top, left + table_w, top + row_h, {236, 236, 236});  // header shading
  for (int r = 0; r <= rows; ++r) fill_rect(im, left, top + r * row_h, left + table_w + 1, top + r * row_h + 1, kRule);
  for (int c = 0, x = left; c <= 4; x += c < 4 ? col_w[c] : 0, ++c)
    fill_rect(im, x, top, x + 1, top + rows * row_h + 1, kRule);
  for (int r = 0; r < rows; ++r) {
    const Font& f = r == 0 ? F.serif_bold : F.serif;
    int baseline = top + r * row_h + 19;
    for (int c = 0, x = left; c < 4; x += col_w[c], ++c) {
      float tx = c == 0 ? x + 10.0f : x + col_w[c] - 10.0f - text_width(f, px, kTable[r][c]);
      draw_text(im, f, px, tx, baseline, kTable[r][c], kInk);
    }
  }
  return top + rows * row_h;
}

Image render_page(const Fonts& F) {
  Image im(kPageW, kPageH, kWhite);
  const float body_px = 15.0f, line_h = 22.0f, text_w = kPageW - 2 * kMargin;
  int y = 112;
  draw_text(im, F.serif_bold, 26.0f, kMargin, y, "Quarterly Report — Field Operations", kBlack);
  y += 30;
  draw_text(im, F.serif, 15.0f, kMargin, y, "Northern Region · July–September 2024 · Issued 14 October 2024", kGrey);
  y += 14;
  fill_rect(im, kMargin, y, kPageW - kMargin, y + 1, kRule);
  y += 40;
  for (const char* para : kParagraphs) {
    for (const std::string& line : wrap(F.serif, body_px, para, text_w)) {
      draw_text(im, F.serif, body_px, kMargin, y, line, kInk);
      y += int(line_h);
    }
    y += 12;  // paragraph gap, no first-line indent
  }
  y = draw_table(im, F, y + 4);
  draw_text(im, F.serif, 13.0f, kMargin, y + 24, "Table 1. Site activity for the third quarter.", kGrey);
  fill_rect(im, kMargin, kPageH - 72, kPageW - kMargin, kPageH - 71, kRule);
  const std::string footer = "Page 1 of 3";
  draw_text(im, F.serif, 13.0f, (kPageW - text_width(F.serif, 13.0f, footer)) / 2, kPageH - 48, footer, kGrey);
  return im;
}

// ---- fixtures ----------------------------------------------------------------------------------

// Gradient + a solid square + a disc + an optional label; shapes scale with the image.
Image fixture(const Fonts& F, int w, int h, int seed, const std::string& label, float label_px) {
  Image im(w, h, kBlack);
  fill_gradient(im, seed);
  int s = std::max(2, std::min(w, h) / 4);
  fill_rect(im, w / 8, h / 8, w / 8 + s, h / 8 + s, {250, 250, 250});
  fill_circle(im, w * 0.7f, h * 0.6f, s * 0.6f, {20, 60, 200});
  fill_rect(im, w - s / 2 - 1, 0, w, h / 3, {230, 40, 30});  // touches the right edge: border handling
  // Baseline raised by a descender's depth so the "j" in labels is not clipped at the bottom.
  if (!label.empty())
    draw_text(im, F.sans_bold, label_px, std::max(3.0f, label_px / 4), h - int(label_px * 0.3f) - 1, label, kBlack);
  return im;
}

// The 3x2 case is spelled out pixel by pixel so tests can assert exact values.
Image tiny() {
  Image im(3, 2, kBlack);
  const Rgb px[6] = {{255, 0, 0}, {0, 255, 0}, {0, 0, 255}, {255, 255, 0}, {0, 128, 255}, {128, 64, 32}};
  for (int i = 0; i < 6; ++i) *reinterpret_cast<Rgb*>(im.at(i % 3, i / 3)) = px[i];
  return im;
}

// Alpha falls off radially, plus a fully transparent and a fully opaque corner, so both ends of
// the alpha range and the blend in between are exercised.
std::vector<uint8_t> with_alpha(const Image& im) {
  std::vector<uint8_t> out(size_t(im.w) * im.h * 4);
  for (int y = 0; y < im.h; ++y)
    for (int x = 0; x < im.w; ++x) {
      size_t i = size_t(y) * im.w + x;
      float d = std::hypot(x - im.w / 2.0f, y - im.h / 2.0f) / (im.w / 2.0f);
      int a = std::clamp(int(std::lround(255 * (1.1f - d))), 0, 255);
      if (x < 12 && y < 12) a = 0;
      if (x >= im.w - 12 && y >= im.h - 12) a = 255;
      std::copy_n(&im.px[3 * i], 3, &out[4 * i]);
      out[4 * i + 3] = uint8_t(a);
    }
  return out;
}

// ---- writing and checking ----------------------------------------------------------------------

// Read the file back with stb_image (an independent decoder path) and insist on the shape we
// meant; PNGs must also round-trip bit-exactly.
void check(const std::string& path, int w, int h, int comp, const uint8_t* expect) {
  int rw, rh, rc;
  uint8_t* got = stbi_load(path.c_str(), &rw, &rh, &rc, 0);
  if (!got) die(path + ": cannot read back: " + stbi_failure_reason());
  bool ok = rw == w && rh == h && rc == comp;
  if (ok && expect) ok = std::equal(expect, expect + size_t(w) * h * comp, got);
  stbi_image_free(got);
  if (!ok) die(path + ": read back as " + std::to_string(rw) + "x" + std::to_string(rh) + "x" + std::to_string(rc));
  std::printf("%-48s %4dx%-4d %d channel%s\n", path.c_str(), w, h, comp, comp > 1 ? "s" : "");
}

void save_png(const std::string& path, int w, int h, int comp, const uint8_t* data) {
  if (!stbi_write_png(path.c_str(), w, h, comp, data, w * comp)) die("cannot write " + path);
  check(path, w, h, comp, data);
}

void save_rgb(const std::string& path, const Image& im) { save_png(path, im.w, im.h, 3, im.px.data()); }

void save_jpg(const std::string& path, const Image& im, int quality) {
  if (!stbi_write_jpg(path.c_str(), im.w, im.h, 3, im.px.data(), quality)) die("cannot write " + path);
  check(path, im.w, im.h, 3, nullptr);  // lossy: shape only
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) die("usage: make_images <repo root>");
  // Paths stay relative when run from the repo root (as the script does), so the log is short.
  const std::string arg = argv[1], root = arg == "." ? "" : arg + "/";
  const std::string fonts = "/usr/share/fonts/truetype/dejavu/", fix = root + "tests/fixtures/vision/images/";
  Fonts F{load_font(fonts + "DejaVuSerif.ttf"), load_font(fonts + "DejaVuSerif-Bold.ttf"),
          load_font(fonts + "DejaVuSans.ttf"), load_font(fonts + "DejaVuSans-Bold.ttf")};
  stbi_write_png_compression_level = 9;  // a little smaller than the default 8; still deterministic

  Image page = render_page(F);
  // The page is pure grey-on-white, so one channel loses nothing and keeps the asset small.
  std::vector<uint8_t> page_grey = to_grey(page);
  save_png(root + "assets/sample-page.png", page.w, page.h, 1, page_grey.data());
  // Box-filtered from the full page rather than re-laid-out, so both show exactly the same layout.
  save_rgb(fix + "page-small.png", downsample2x(page));

  save_rgb(fix + "square-64.png", fixture(F, 64, 64, 0, "64", 13));
  save_rgb(fix + "wide-200x48.png", fixture(F, 200, 48, 1, "ckjit 200x48", 14));
  save_rgb(fix + "tall-40x150.png", fixture(F, 40, 150, 2, "40", 12));
  save_rgb(fix + "tiny-3x2.png", tiny());
  save_rgb(fix + "resize-333x117.png", fixture(F, 333, 117, 3, "resize 333 x 117", 20));
  Image grey = fixture(F, 96, 80, 4, "grey", 14);
  save_png(fix + "grey-96x80.png", grey.w, grey.h, 1, to_grey(grey).data());
  Image rgba = fixture(F, 72, 72, 5, "rgba", 13);
  save_png(fix + "rgba-72x72.png", rgba.w, rgba.h, 4, with_alpha(rgba).data());
  save_jpg(fix + "big-640x480.jpg", fixture(F, 640, 480, 6, "ckjit big 640 x 480", 36), 90);
  return 0;
}
