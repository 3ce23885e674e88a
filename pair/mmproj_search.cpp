#include "pair/mmproj_search.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
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
  const std::string who = wanted_by.empty() ? "" : wanted_by + ": ";
  std::string listed;
  for (const std::string& f : fits) listed += (listed.empty() ? "" : ", ") + f;
  if (fits.size() > 1)
    throw Error(who + "an image needs $mmproj; several projectors beside " + model_path + " fit it: " + listed + " (name one)",
                ErrorKind::bad_model);
  for (const std::string& r : refused) listed += (listed.empty() ? "" : "; ") + r;
  throw Error(who + "an image needs $mmproj (the vision projector GGUF of the model); none beside " + model_path +
                  (listed.empty() ? std::string(" (no mmproj*.gguf in ") + dir.string() + ")" : " fits: " + listed),
              ErrorKind::bad_model);
}

}  // namespace ckjit::pair
