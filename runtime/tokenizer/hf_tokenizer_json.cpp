#include "runtime/tokenizer/hf_tokenizer_json.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "runtime/error.h"
#include "runtime/json.h"

namespace ckjit::tok {
namespace {

constexpr std::string_view kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The pre-tokenizer must be the Qwen2 split (the only one this runtime implements); llama.cpp's
// converter identifies it by hashing tokenizer outputs, we check the regex text directly.
void check_pre_tokenizer(const JsonValue& root) {
  const auto pre = root.find("pre_tokenizer");
  bool found = false;
  if (pre && pre->is_object())
    if (const auto list = pre->find("pretokenizers"); list && list->is_array())
      for (const JsonValue& p : list->as_array())
        if (const auto pat = p.find("pattern"))
          if (const auto re = pat->find("Regex"); re && re->is_string() && re->as_string() == kQwen2Regex)
            found = true;
  if (!found) throw Error("tokenizer.json: the pre-tokenizer is not Qwen2's split regex");
}

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A special-token entry of tokenizer_config.json: a string or {"content": ...}.
const std::string* token_content(const std::optional<JsonValue>& v) {
  if (!v) return nullptr;
  if (v->is_string()) return &v->as_string();
  if (v->is_object())
    if (const auto c = v->find("content"); c && c->is_string()) return &c->as_string();
  return nullptr;
}

}  // namespace

bool hf_token_looks_special(std::string_view t) {
  if (t == "<pad>" || t == "<mask>" || t == "<2mass>" || t == "[@BOS@]") return true;
  if (t.size() >= 4 && t.starts_with("<|") && t.ends_with("|>")) return true;
  if (t.starts_with("<\xEF\xBD\x9C") && t.ends_with("\xEF\xBD\x9C>") && t.size() >= 8) return true;  // <｜...｜>
  return t.starts_with("<unused") && t.ends_with(">");
}

TokenizerVocab vocab_from_hf_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                                  const HfTokenizerOptions& options) {
  const JsonValue root = parse_json(tokenizer_json);
  const JsonValue& model = root.at("model");
  if (model.at("type").as_string("model.type") != "BPE") throw Error("tokenizer.json: model type is not BPE");
  check_pre_tokenizer(root);

  // id -> text, from the BPE vocab and the added tokens (which may also be in the vocab).
  std::unordered_map<int64_t, std::string> by_id;
  int64_t max_id = -1;
  for (const auto& [text, id] : model.at("vocab").as_object("model.vocab")) {
    const int64_t i = id.as_int("vocab id");
    if (i < 0 || i > 0x7FFFFFFE) throw Error("tokenizer.json: vocab id out of range");
    by_id[i] = text;
    max_id = std::max(max_id, i);
  }
  std::unordered_map<int64_t, bool> added;  // id -> HF "special"
  if (const auto list = root.find("added_tokens"))
    for (const JsonValue& t : list->as_array("added_tokens")) {
      const int64_t i = t.at("id").as_int("added token id");
      if (i < 0 || i > 0x7FFFFFFE) throw Error("tokenizer.json: added token id out of range");
      by_id[i] = t.at("content").as_string("added token content");
      const auto special = t.find("special");
      added[i] = special && special->as_bool("added token special");
      max_id = std::max(max_id, i);
    }

  TokenizerVocab v;
  const int64_t n = std::max<int64_t>(max_id + 1, options.vocab_size);
  v.tokens.resize(n);
  v.token_types.resize(n);
  for (int64_t i = 0; i < n; ++i) {
    auto it = by_id.find(i);
    if (it == by_id.end()) {
      v.tokens[i] = "[PAD" + std::to_string(i) + "]";
      v.token_types[i] = static_cast<int32_t>(TokenType::Unused);
      continue;
    }
    v.tokens[i] = it->second;
    auto a = added.find(i);
    TokenType type = TokenType::Normal;
    if (a != added.end()) type = (a->second || hf_token_looks_special(it->second)) ? TokenType::Control : TokenType::UserDefined;
    v.token_types[i] = static_cast<int32_t>(type);
  }

  const auto& merges = model.at("merges").as_array("model.merges");
  v.merges.reserve(merges.size());
  for (const JsonValue& m : merges) {
    if (m.is_string()) {
      v.merges.push_back(m.as_string());
    } else {  // newer format: ["left", "right"]
      const auto& pair = m.as_array("merge");
      if (pair.size() != 2) throw Error("tokenizer.json: a merge must have two sides");
      v.merges.push_back(pair[0].as_string("merge") + " " + pair[1].as_string("merge"));
    }
  }

  v.bos_id = options.fallback_bos_id;
  v.eos_id = options.fallback_eos_id;
  if (!tokenizer_config_json.empty()) {
    const JsonValue cfg = parse_json(tokenizer_config_json);
    auto id_of = [&](const std::string& text) -> int32_t {
      for (int64_t i = 0; i < n; ++i)
        if (v.tokens[i] == text) return static_cast<int32_t>(i);
      return -1;
    };
    if (const std::string* bos = token_content(cfg.find("bos_token")))
      if (int32_t id = id_of(*bos); id >= 0) v.bos_id = id;
    if (const std::string* eos = token_content(cfg.find("eos_token")))
      if (int32_t id = id_of(*eos); id >= 0) v.eos_id = id;
    if (const auto b = cfg.find("add_bos_token"); b && !b->is_null()) v.add_bos = b->as_bool("add_bos_token");
    if (const auto e = cfg.find("add_eos_token"); e && !e->is_null()) v.add_eos = e->as_bool("add_eos_token");
  }
  if (v.add_bos && v.bos_id < 0) v.add_bos = false;
  return v;
}

TokenizerVocab vocab_from_hf_dir(const std::string& dir, const HfTokenizerOptions& options) {
  const std::string config_path = dir + "/tokenizer_config.json";
  const std::string config = std::filesystem::exists(config_path) ? read_file(config_path) : std::string();
  return vocab_from_hf_json(read_file(dir + "/tokenizer.json"), config, options);
}

}  // namespace ckjit::tok
