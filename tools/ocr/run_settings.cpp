#include "tools/ocr/run_settings.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/error.h"

namespace ckjit::ocr {

namespace fs = std::filesystem;

std::string settings_path(const std::string& journal) { return journal + ".settings.json"; }

Record run_settings(const OcrOptions& o) {
  auto file = [](const std::string& p) { return p.empty() ? std::string() : fs::absolute(p).lexically_normal().string(); };
  return Record{{"model", file(o.model)},           {"mmproj", file(o.mmproj)},
                {"prompt", o.prompt},               {"dpi", o.dpi}, {"max_side", o.max_side},
                {"n_predict", o.n_predict},         {"temp", o.temp},
                {"seed", o.seed},                   {"json_schema", o.json_schema},
                {"repeat_penalty", o.repeat_penalty}, {"max_repeats", o.max_repeats},
                {"image_min_tokens", o.image_min_tokens}, {"image_max_tokens", o.image_max_tokens},
                {"vision_precision", o.vision_precision}, {"ignore_eos", o.ignore_eos}};
}

void check_and_store_settings(const OcrOptions& o, size_t journal_records, bool force) {
  const std::string path = settings_path(o.out);
  const Record now = run_settings(o);
  if (journal_records > 0 && !force && fs::exists(path)) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    const Record before = Record::parse(ss.str(), nullptr, false);
    std::string changed;
    for (const auto& [key, value] : now.items())
      if (!before.is_object() || !before.contains(key) || before[key] != value)
        changed += (changed.empty() ? "" : ", ") + key + " (was " + (before.is_object() && before.contains(key) ? before[key].dump() : "unknown") +
                   ", now " + value.dump() + ")";
    if (!changed.empty())
      throw Error(o.out + " holds " + std::to_string(journal_records) + " pages made with other settings: " + changed +
                      "; use another -o, or --force-resume to add pages made with these settings",
                  ErrorKind::invalid_argument);
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << now.dump(2) << "\n";
    if (!out.flush()) throw Error("cannot write " + tmp);
  }
  fs::rename(tmp, path);
}

}  // namespace ckjit::ocr
