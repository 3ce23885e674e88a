#include "tools/ocr/inputs.h"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>

#include "runtime/error.h"
#include "runtime/image/image.h"
#include "tools/ocr/pdf.h"

namespace fs = std::filesystem;

namespace ckjit::ocr {

namespace {

std::string lower_ext(const fs::path& p) {
  std::string e = p.extension().string();
  std::transform(e.begin(), e.end(), e.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return e;
}

// "PATH: a TIFF image, which ckjit ocr does not read (...)", from the file's first bytes only.
std::string unreadable_format_error(const std::string& path) {
  std::vector<uint8_t> head(512);
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(head.data()), std::streamsize(head.size()));
  head.resize(size_t(in.gcount()));
  const std::string what = image::describe_other_format(head);
  return path + ": " + (what.empty() ? "not an image or PDF" : what + ", which ckjit ocr does not read") +
         " (it reads " + std::string(image::kReadFormats) + " images and PDF; convert the file, e.g. to PNG)";
}

// Pages of the TIFF at path (every one within the decoder's limits), or -1 with error set.
int tiff_page_count(const std::string& path, std::string& error) {
  try {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(path + ": cannot open image");
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return image::read_header(bytes, path).pages;
  } catch (const Error& e) {
    error = e.what();
    return -1;
  }
}

}  // namespace

std::optional<DocKind> classify_file(const std::string& path) {
  uint8_t b[8] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(reinterpret_cast<char*>(b), sizeof b);
  const size_t n = size_t(in.gcount());
  if (n >= 5 && std::memcmp(b, "%PDF-", 5) == 0) return DocKind::pdf;
  // The image decoder's own sniffing: the formats ocr reads are the ones it decodes.
  const image::Format f = image::sniff_format(std::span<const uint8_t>(b, n));
  if (f == image::Format::Tiff) return DocKind::tiff;
  if (f != image::Format::Unknown) return DocKind::image;
  // The magic did not say (a broken file, say): the name decides, so a broken page.png is kept
  // and reported rather than skipped.
  const std::string e = lower_ext(path);
  if (e == ".pdf") return DocKind::pdf;
  if (e == ".tif" || e == ".tiff") return DocKind::tiff;
  if (e == ".png" || e == ".jpg" || e == ".jpeg" || e == ".bmp" || e == ".gif" || e == ".webp") return DocKind::image;
  return std::nullopt;
}

std::vector<Document> enumerate_documents(const std::vector<std::string>& inputs, const std::function<bool(const std::string&)>& is_output,
                                          SkippedFiles* skipped) {
  SkippedFiles local;
  SkippedFiles& skip = skipped ? *skipped : local;
  std::vector<Document> out;
  std::set<std::string> seen;  // a file named twice (alone and in its folder) is one document
  // One spelling per file: "./a.png", "a.png" and "x/../a.png" are one document and one journal key
  // (lexically: no symlinks resolved and relative paths kept relative, so shards stay the same on
  // every machine that runs the same command line).
  auto add = [&](const std::string& given, std::optional<DocKind> kind) {
    const std::string path = fs::path(given).lexically_normal().string();
    if (seen.insert(path).second) out.push_back({path, kind.value_or(DocKind::image), kind.has_value()});
  };
  for (const std::string& in : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(in, ec);
    if (ec || !fs::exists(st)) throw Error("input '" + in + "' does not exist");
    if (fs::is_directory(st)) {
      std::vector<std::string> files;
      // Symlinked folders are not entered (a link cycle would never end); symlinked files are read.
      for (fs::recursive_directory_iterator it(in, fs::directory_options::none, ec), end; !ec && it != end; it.increment(ec))
        if (it->is_regular_file(ec)) files.push_back(it->path().string());
      if (ec) throw Error("cannot list folder '" + in + "': " + ec.message());
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) {
        if (fs::path(f).filename().string().rfind('.', 0) == 0) ++skip.hidden;
        else if (is_output && is_output(fs::path(f).lexically_normal().string())) ++skip.outputs;
        else add(f, classify_file(f));
      }
    } else {
      add(in, classify_file(in));
    }
  }
  return out;
}

std::vector<Page> expand_pages(const std::vector<Document>& docs) {
  std::vector<Page> pages;
  for (const Document& d : docs) {
    if (!d.recognised) {
      pages.push_back({d.source, 1, d.kind, unreadable_format_error(d.source)});
      continue;
    }
    if (d.kind == DocKind::image) {
      pages.push_back({d.source, 1, d.kind, ""});
      continue;
    }
    std::string error;
    const int n = d.kind == DocKind::pdf ? pdf_page_count(d.source, error) : tiff_page_count(d.source, error);
    if (n < 0) pages.push_back({d.source, 1, d.kind, error});
    for (int p = 1; p <= n; ++p) pages.push_back({d.source, p, d.kind, ""});
  }
  return pages;
}

Shard parse_shard(const std::string& text) {
  const size_t slash = text.find('/');
  auto number = [&](const std::string& s, const char* what) -> uint32_t {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); }))
      throw Error("--shard '" + text + "': " + what + " is not a number (expected i/N, 0 <= i < N, e.g. 0/4)");
    return uint32_t(std::stoul(s));
  };
  if (slash == std::string::npos) throw Error("--shard '" + text + "': expected i/N (0-based index i of N shards, e.g. 0/4)");
  Shard s{number(text.substr(0, slash), "the index"), number(text.substr(slash + 1), "the count")};
  if (s.count < 1) throw Error("--shard '" + text + "': the shard count must be at least 1");
  if (s.index >= s.count)
    throw Error("--shard '" + text + "': the index is 0-based and must be below the count (0.." + std::to_string(s.count - 1) + ")");
  return s;
}

std::string page_key(const std::string& source, int page) { return source + '\n' + std::to_string(page); }

uint32_t shard_of(const std::string& source, int page, uint32_t count) {
  uint64_t h = 0xcbf29ce484222325ull;  // FNV-1a: fixed, byte-order free, no std::hash (which may differ by build)
  for (unsigned char c : page_key(source, page)) h = (h ^ c) * 0x100000001b3ull;
  return uint32_t(h % count);
}

}  // namespace ckjit::ocr
