#include "tools/run_default.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "runtime/error.h"
#include "runtime/synth/compact_text.h"
#include "runtime/synth/synth_model.h"

namespace ckjit::cli {

namespace fs = std::filesystem;

namespace {

const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

fs::path user_cache_dir() {
  const char* xdg = env("XDG_CACHE_HOME");
  const char* home = env("HOME");
  return xdg ? fs::path(xdg) / "ckjit" : home ? fs::path(home) / ".cache" / "ckjit" : fs::temp_directory_path() / "ckjit";
}

std::string tokenizer_dir() {
  const char* tk = env("CKJIT_TOKENIZER_DIR");
  return tk ? tk : CKJIT_DEFAULT_TOKENIZER_DIR;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The trained pair's files (tools/train_tiny_ocr/README.md says how they are made).
constexpr const char* kCompact = "tiny-ocr-Q8_0.compact.gguf";
constexpr const char* kMmproj = "mmproj-tiny-ocr-q8_0.gguf";
constexpr const char* kPage = "sample.png";
constexpr const char* kPageText = "sample.txt";

std::optional<DefaultPair> trained_pair() {
  const fs::path dir = env("CKJIT_TRAINED_DIR") ? fs::path(env("CKJIT_TRAINED_DIR")) : fs::path(CKJIT_TRAINED_DIR);
  for (const char* f : {kCompact, kMmproj, kPage, kPageText})
    if (!fs::exists(dir / f)) return std::nullopt;
  // Expanded once per compact file: its size and modification time name the cache entry.
  const auto size = fs::file_size(dir / kCompact);
  const auto stamp = fs::last_write_time(dir / kCompact).time_since_epoch().count();
  const fs::path cache = user_cache_dir() / ("tiny-ocr-" + std::to_string(size) + "-" + std::to_string(stamp));
  const fs::path model = cache / "tiny-ocr-Q8_0.gguf";
  if (!fs::exists(model)) {
    std::fprintf(stderr, "run: expanding the trained tiny OCR model into %s (once; ckjit synth --expand)\n", cache.string().c_str());
    fs::create_directories(cache);
    synth::expand_compact_text((dir / kCompact).string(), tokenizer_dir(), model.string());
  }
  std::string text = read_file(dir / kPageText);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return DefaultPair{model.string(), (dir / kMmproj).string(), (dir / kPage).string(), "", text};
}

DefaultPair random_pair(const std::string& preset) {
  auto dims = qwen3vl::preset_dims(preset);
  const fs::path dir = user_cache_dir() / ("default-" + preset);
  const char* page = env("CKJIT_SAMPLE_PAGE");
  DefaultPair out{(dir / synth::text_file_name(dims.preset, qwen3vl::TextMix::Q4_K_M)).string(),
                  (dir / synth::mmproj_file_name(dims.preset, qwen3vl::MmprojType::F16)).string(),
                  page ? page : CKJIT_SAMPLE_PAGE, preset, ""};
  if (fs::exists(out.model) && fs::exists(out.mmproj)) return out;
  synth::SynthOptions o;
  o.seed = 1;
  o.sharpness = 10.0f;  // clear greedy choices
  o.tokenizer_dir = tokenizer_dir();
  std::fprintf(stderr, "run: synthesizing the default %s pair into %s (once; ckjit synth --preset %s --seed 1 --sharpness 10)\n",
               preset.c_str(), dir.string().c_str(), preset.c_str());
  // Written next to the cache and renamed when complete: an interrupted run leaves no half file.
  const fs::path tmp = dir.string() + ".partial-" + std::to_string(::getpid());
  fs::remove_all(tmp);
  int last = -1;
  auto progress = [&](uint64_t done, uint64_t total) {
    const int pct = total ? int(done * 100 / total) : 100;
    if (pct == last) return;
    last = pct;
    const int bar = pct * 40 / 100;
    std::fprintf(stderr, "\rsynth [%.*s%*s] %3d%% of %.0f MiB", bar, "========================================", 40 - bar, "",
                 pct, double(total) / 1048576.0);
    if (pct == 100) std::fputc('\n', stderr);
  };
  synth::write_qwen3vl_pair(dims, o, tmp.string(), progress);
  fs::create_directories(dir.parent_path());
  fs::remove_all(dir);
  fs::rename(tmp, dir);
  return out;
}

std::vector<char32_t> code_points(const std::string& s) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
    char32_t cp = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n && i + size_t(k) < s.size(); ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + size_t(k)]) & 0x3F);
    out.push_back(cp);
    i += size_t(n);
  }
  return out;
}

}  // namespace

DefaultPair default_pair() {
  if (const char* preset = env("CKJIT_DEFAULT_PRESET")) return random_pair(preset);
  if (auto trained = trained_pair()) return *trained;
  return random_pair("2b");
}

double char_error_rate(const std::string& hypothesis, const std::string& reference) {
  const auto h = code_points(hypothesis), r = code_points(reference);
  std::vector<size_t> prev(r.size() + 1), cur(r.size() + 1);
  for (size_t j = 0; j <= r.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= h.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= r.size(); ++j)
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (h[i - 1] != r[j - 1] ? 1 : 0)});
    std::swap(prev, cur);
  }
  return double(prev[r.size()]) / double(std::max<size_t>(1, r.size()));
}

}  // namespace ckjit::cli
