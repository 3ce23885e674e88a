#include "pair/mmproj_search.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <string_view>
#include <vector>

#include "pair/pair_checks.h"
#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "vision/vision_hparams.h"

namespace ckjit::pair {

namespace fs = std::filesystem;

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

fs::path folder_of(const std::string& model_path) {
  const fs::path dir = fs::path(model_path).parent_path();
  return dir.empty() ? fs::path(".") : dir;
}

// mmproj*.gguf files of dir, sorted (the listing order of a folder is no order).
std::vector<fs::path> candidates(const fs::path& dir) {
  std::vector<fs::path> out;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = lower(it->path().filename().string());
    if (name.rfind("mmproj", 0) == 0 && name.size() > 5 && name.substr(name.size() - 5) == ".gguf" && it->is_regular_file(ec))
      out.push_back(it->path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// A file's stem without ".gguf" and a trailing weight-type tag ("-Q4_K_M", ".f16", "_BF16", ...), lower
// case: what a model and its projector share in the names HF repos and llama.cpp's converter give
// them (X-Q4_K_M.gguf and mmproj-X-F16.gguf).
std::string stem(const fs::path& p) {
  std::string s = lower(p.filename().string());
  if (s.size() > 5 && s.substr(s.size() - 5) == ".gguf") s.resize(s.size() - 5);
  static const char* const kTypes[] = {"q4_k_m", "q4_k_s", "q5_k_m", "q5_k_s", "q6_k", "q8_0", "q4_0", "q4_1", "q5_0",
                                       "q5_1", "q3_k_m", "q3_k_s", "q3_k_l", "q2_k", "iq4_xs", "iq4_nl", "f16", "bf16",
                                       "f32", "mixed"};
  for (const char* t : kTypes) {
    const std::string tag(t);
    if (s.size() > tag.size() + 1 && s.compare(s.size() - tag.size(), tag.size(), tag) == 0 &&
        std::string_view("-_.").find(s[s.size() - tag.size() - 1]) != std::string_view::npos) {
      s.resize(s.size() - tag.size() - 1);
      break;
    }
  }
  return s;
}

std::string mmproj_stem(const fs::path& p) {
  std::string s = stem(p);  // "mmproj-x" -> "x"
  s.erase(0, 6);
  if (!s.empty() && std::string_view("-_.").find(s[0]) != std::string_view::npos) s.erase(0, 1);
  return s;
}

}  // namespace

bool has_mmproj_beside(const std::string& model_path) {
  return !candidates(folder_of(model_path)).empty();
}

MmprojFound find_mmproj_beside(const std::string& model_path, const graph::Hparams& text, const std::string& wanted_by) {
  const fs::path dir = folder_of(model_path);
  std::vector<std::string> fits, refused;
  for (const fs::path& p : candidates(dir)) {
    try {
      const gguf::GgufFile f = gguf::GgufFile::open(p.string());
      check_pair(vision::read_vision_hparams(f), p.string(), text, model_path);
      fits.push_back(p.string());
    } catch (const Error& e) {
      refused.push_back(p.filename().string() + " (" + e.what() + ")");
    }
  }
  if (fits.size() == 1) return {fits.front(), "mmproj: " + fits.front() + " (found beside " + model_path + ")"};
  // Several fit: the one whose name carries the model's own (mmproj-X-F16.gguf for X-Q4_K_M.gguf).
  std::vector<std::string> named;
  for (const std::string& f : fits)
    if (mmproj_stem(f) == stem(model_path)) named.push_back(f);
  if (fits.size() > 1 && named.size() == 1)
    return {named.front(), "mmproj: " + named.front() + " (found beside " + model_path + "; its name carries the model's, " +
                               std::to_string(fits.size() - 1) + " other projector" + (fits.size() > 2 ? "s" : "") + " there fit too)"};
  const std::string who = wanted_by.empty() ? "" : wanted_by + ": ";
  std::string listed;
  for (const std::string& f : fits) listed += (listed.empty() ? "" : ", ") + f;
  if (fits.size() > 1)
    throw Error(who + "an image needs $mmproj; several projectors beside " + model_path + " fit it and none carries the "
                "model's name (" + stem(model_path) + "): " + listed + " (name one)",
                ErrorKind::bad_model);
  for (const std::string& r : refused) listed += (listed.empty() ? "" : "; ") + r;
  throw Error(who + "an image needs $mmproj (the vision projector GGUF of the model); none beside " + model_path +
                  (listed.empty() ? std::string(" (no mmproj*.gguf in ") + dir.string() + ")" : " fits: " + listed),
              ErrorKind::bad_model);
}

}  // namespace ckjit::pair
