#include "tools/serve/openai_request.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdlib>

#include <algorithm>

#include "graph/bridge.h"
#include "include/ckjit.h"
#include "tools/serve/json_body.h"

namespace ckjit::serve {

namespace {

using json = nlohmann::ordered_json;  // a response_format schema keeps its properties in order

[[noreturn]] void bad(const std::string& msg, const std::string& code = "invalid_request") {
  throw HttpError(400, "invalid_request_error", code, msg);
}

// User text must not place images itself: a stray marker would shift every image after it.
std::string without_markers(std::string s) {
  const std::string m = graph::kMediaMarker;
  for (size_t at; (at = s.find(m)) != std::string::npos;) s.erase(at, m.size());
  return s;
}

double number(const json& j, const char* name, double lo, double hi) {
  if (!j.is_number()) bad(std::string("'") + name + "' must be a number");
  const double v = j.get<double>();
  if (!(v >= lo && v <= hi)) bad(std::string("'") + name + "' is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

std::pair<int32_t, int32_t> checked_size(const std::string& bytes, size_t index, const RequestLimits& limits) {
  int32_t w = 0, h = 0;
  if (ckjit_image_info(bytes.data(), bytes.size(), &w, &h) != CKJIT_OK)
    bad("image " + std::to_string(index + 1) + ": " + ckjit_last_error(), "invalid_image");
  if (int64_t(w) * h > limits.max_image_pixels)
    throw HttpError(400, "invalid_request_error", "image_too_large",
                    "image " + std::to_string(index + 1) + " is " + std::to_string(w) + " x " + std::to_string(h) +
                        " pixels, above the server's limit of " + std::to_string(limits.max_image_pixels) + " pixels");
  return {w, h};
}

// One message's content: a string, or an array of text and image_url parts.
std::string content_of(const json& c, ChatRequest& out, const RequestLimits& limits) {
  if (c.is_string()) return without_markers(c.get<std::string>());
  if (c.is_null()) return "";
  if (!c.is_array()) bad("'content' must be a string or an array of parts");
  std::string text;
  for (const json& part : c) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) bad("each content part needs a string 'type'");
    const std::string type = part["type"].get<std::string>();
    if (type == "text") {
      if (!part.contains("text") || !part["text"].is_string()) bad("a text part needs a string 'text'");
      text += without_markers(part["text"].get<std::string>());
    } else if (type == "image_url") {
      const json* u = part.contains("image_url") ? &part["image_url"] : nullptr;
      std::string url;
      if (u && u->is_string()) url = u->get<std::string>();
      else if (u && u->is_object() && u->contains("url") && (*u)["url"].is_string()) url = (*u)["url"].get<std::string>();
      else bad("an image_url part needs 'image_url': {\"url\": ...}");
      if (out.images.size() >= limits.max_images)
        bad("more than " + std::to_string(limits.max_images) + " images in one request", "too_many_images");
      out.images.push_back(resolve_image_url(url, limits));
      out.image_sizes.push_back(checked_size(out.images.back(), out.images.size() - 1, limits));
      text += graph::kMediaMarker;
    } else {
      bad("unsupported content part type '" + type + "'");
    }
  }
  return text;
}

// OpenAI's response_format: text (none), json_object (any object; llama-server's "schema" member
// narrows it) or json_schema {name, schema, strict, description}. The schema's JSON text, if any.
std::optional<std::string> response_format_schema(const json& rf) {
  const std::string type = rf["type"].get<std::string>();
  for (const auto& [k, v] : rf.items())
    if (k != "type" && k != "json_schema" && k != "schema") bad("unknown 'response_format' member '" + k + "'", "unknown_parameter");
  if (type == "text") return std::nullopt;
  if (type == "json_object") return rf.contains("schema") ? rf["schema"].dump() : std::string(R"({"type":"object"})");
  if (type != "json_schema") bad("unknown 'response_format' type '" + type + "'");
  if (!rf.contains("json_schema") || !rf["json_schema"].is_object()) bad("'response_format' json_schema needs a 'json_schema' object");
  const json& js = rf["json_schema"];
  for (const auto& [k, v] : js.items())
    if (k != "name" && k != "schema" && k != "strict" && k != "description")
      bad("unknown 'response_format.json_schema' member '" + k + "'", "unknown_parameter");
  if (!js.contains("name") || !js["name"].is_string()) bad("'response_format.json_schema' needs a string 'name'");
  if (js.contains("strict") && !js["strict"].is_boolean() && !js["strict"].is_null()) bad("'response_format.json_schema.strict' must be a boolean");
  // strict or not, the answer is held to the schema (ckjit never writes outside it).
  return js.contains("schema") ? js["schema"].dump() : std::string("{}");
}

// The file at `rel` under `root`, opened without blocking (a FIFO never holds a worker) and
// without following any link, so one swapped into the path after realpath cannot lead out of the
// root: openat2's RESOLVE_BENEATH where the kernel has it (Linux 5.6), else O_NOFOLLOW on the whole
// path (then only the last component is guarded). -1 when it cannot be opened so.
int open_beneath(const std::string& root, const std::string& rel) {
  constexpr int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  const int dir = ::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return -1;
  open_how how{};
  how.flags = flags;
  how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
  int fd = int(::syscall(SYS_openat2, dir, rel.c_str(), &how, sizeof how));
  if (fd < 0 && errno == ENOSYS) fd = ::openat(dir, rel.c_str(), flags | O_NOFOLLOW);
  ::close(dir);
  return fd;
}

// A local image: only a regular file under the root once links and '..' are resolved, opened
// without blocking (a FIFO or device never holds a worker) and no bigger than a body. A path
// outside the root and one that does not exist get the same answer, so neither is probed.
std::string read_local_image(const std::string& path, const RequestLimits& limits) {
  if (limits.local_image_root.empty())
    throw HttpError(403, "invalid_request_error", "local_images_disabled",
                    "local image paths are refused (start the server with --allow-local-images DIR)");
  const std::string& root = limits.local_image_root;
  const std::string not_here = "no readable image file '" + path + "' under the server's image folder";
  char* real_c = ::realpath(path.c_str(), nullptr);
  const std::string real = real_c ? real_c : "";
  std::free(real_c);
  const bool under = !real.empty() && real.size() > root.size() && real.compare(0, root.size(), root) == 0 &&
                     (root.back() == '/' || real[root.size()] == '/');
  if (!under) throw HttpError(403, "invalid_request_error", "local_image_refused", not_here);
  const int fd = open_beneath(root, real.substr(root.back() == '/' ? root.size() : root.size() + 1));
  if (fd < 0) throw HttpError(403, "invalid_request_error", "local_image_refused", not_here);
  struct stat sb {};
  std::string bytes;
  const bool regular = ::fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
  const size_t cap = limits.max_local_image_bytes;
  if (regular && size_t(sb.st_size) <= cap) {
    bytes.resize(size_t(sb.st_size));
    size_t got = 0;
    while (got < bytes.size()) {
      const ssize_t n = ::read(fd, bytes.data() + got, bytes.size() - got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      got += size_t(n);
    }
    bytes.resize(got);
  }
  ::close(fd);
  if (!regular) throw HttpError(403, "invalid_request_error", "local_image_refused", not_here + " (not a regular file)");
  if (size_t(sb.st_size) > cap)
    bad("the image file '" + path + "' is " + std::to_string(sb.st_size) + " bytes, above the server's limit of " + std::to_string(cap) +
            " (--max-body-mb)",
        "image_too_large");
  return bytes;
}

}  // namespace

std::string decode_base64(std::string_view text) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++pad;
      continue;
    }
    const int v = value(c);
    if (v < 0 || pad > 0) bad("the data: URI is not valid base64", "invalid_image");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xff));
    }
  }
  if (pad > 2 || bits >= 6) bad("the data: URI is not valid base64 (truncated)", "invalid_image");
  return out;
}

std::string resolve_image_url(std::string_view url, const RequestLimits& limits) {
  if (url.substr(0, 5) == "data:") {
    const size_t comma = url.find(',');
    if (comma == std::string_view::npos) bad("the data: URI has no ','", "invalid_image");
    const std::string_view meta = url.substr(5, comma - 5);
    if (meta.substr(0, 6) != "image/") bad("the data: URI is not an image (media type '" + std::string(meta) + "')", "invalid_image");
    if (meta.size() < 7 || meta.substr(meta.size() - 7) != ";base64") bad("the data: URI must be base64 (';base64')", "invalid_image");
    std::string bytes = decode_base64(url.substr(comma + 1));
    if (bytes.empty()) bad("the data: URI holds no bytes", "invalid_image");
    return bytes;
  }
  std::string path;
  if (url.substr(0, 7) == "file://") path = std::string(url.substr(7));
  else if (!url.empty() && url[0] == '/') path = std::string(url);
  else bad("image_url must be a data: URI (http(s) URLs are not fetched)", "invalid_image");
  return read_local_image(path, limits);
}

std::string canonical_image_root(const std::string& dir) {
  char* real = ::realpath(dir.c_str(), nullptr);
  struct stat sb {};
  const bool ok = real && ::stat(real, &sb) == 0 && S_ISDIR(sb.st_mode);
  std::string out = real ? real : "";
  std::free(real);
  if (!ok) throw std::runtime_error("--allow-local-images: '" + dir + "' is not a folder (give the folder whose images clients may name)");
  return out;
}

const std::vector<FieldRule>& chat_request_fields() {
  static const std::vector<FieldRule> fields = {
      {"model", nullptr}, {"messages", nullptr}, {"temperature", nullptr}, {"top_p", nullptr}, {"top_k", nullptr},
      {"min_p", nullptr}, {"max_tokens", nullptr}, {"max_completion_tokens", nullptr}, {"seed", nullptr}, {"stop", nullptr},
      {"stream", nullptr}, {"stream_options", nullptr}, {"presence_penalty", nullptr}, {"frequency_penalty", nullptr},
      {"repeat_penalty", nullptr}, {"repeat_last_n", nullptr}, {"logit_bias", nullptr}, {"n", nullptr},
      {"logprobs", nullptr}, {"top_logprobs", nullptr}, {"response_format", nullptr}, {"user", nullptr},
      {"cache_prompt", nullptr}, {"ignore_eos", nullptr}, {"grammar", nullptr}, {"image_min_tokens", nullptr},
      {"image_max_tokens", nullptr},
      {"tools", "tool calling is not supported"}, {"tool_choice", "tool calling is not supported"},
      {"parallel_tool_calls", "tool calling is not supported"}, {"functions", "function calling is not supported"},
      {"function_call", "function calling is not supported"},
      {"audio", "audio output is not supported"}, {"modalities", "ckjit answers with text only; omit 'modalities'"},
      {"prediction", "predicted outputs are not supported"}, {"reasoning_effort", "the model has no reasoning settings"},
      {"verbosity", "the model has no verbosity setting"}, {"web_search_options", "web search is not supported"},
      {"store", "stored completions are not supported"}, {"metadata", "stored completions are not supported"},
      {"service_tier", "there are no service tiers"}, {"prompt_cache_key", "use 'cache_prompt' (prefix reuse is automatic)"},
      {"safety_identifier", "not supported"}};
  return fields;
}

namespace {

bool given(const json& j, const char* key) { return j.contains(key) && !j[key].is_null(); }

bool boolean(const json& j, const char* key) {
  if (!j[key].is_boolean()) bad(std::string("'") + key + "' must be a boolean");
  return j[key].get<bool>();
}

int64_t integer(const json& j, const char* key, int64_t lo, int64_t hi) {
  if (!j[key].is_number_integer()) bad(std::string("'") + key + "' must be an integer");
  const int64_t v = j[key].get<int64_t>();
  if (v < lo || v > hi) bad(std::string("'") + key + "' must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
  return v;
}

// OpenAI's object {"token id": bias} or llama-server's [[id, bias], ...]; bias in [-100, 100].
std::vector<std::pair<int32_t, float>> logit_bias_of(const json& lb) {
  std::vector<std::pair<int32_t, float>> out;
  auto add = [&](const std::string& id_text, const json& bias) {
    if (id_text.empty() || id_text.size() > 9 || id_text.find_first_not_of("0123456789") != std::string::npos)
      bad("'logit_bias' keys must be token ids (decimal), not '" + id_text + "'");
    out.emplace_back(int32_t(std::stol(id_text)), float(number(bias, "logit_bias value", -100, 100)));
  };
  if (lb.is_object()) {
    for (auto it = lb.begin(); it != lb.end(); ++it) add(it.key(), it.value());
  } else if (lb.is_array()) {
    for (const json& e : lb) {
      if (!e.is_array() || e.size() != 2 || !e[0].is_number_integer()) bad("'logit_bias' as an array holds [token id, bias] pairs");
      add(std::to_string(e[0].get<int64_t>()), e[1]);
    }
  } else {
    bad("'logit_bias' must be an object of token id to bias");
  }
  if (out.size() > 1024) bad("'logit_bias' holds more than 1024 entries");
  return out;
}

}  // namespace

namespace {

json parse_body(std::string_view body) { return parse_json_body(body); }

void check_fields(const json& j, const std::vector<FieldRule>& rules) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const FieldRule* f = nullptr;
    for (const FieldRule& r : rules)
      if (it.key() == r.name) f = &r;
    if (!f) bad("unrecognized request argument supplied: '" + it.key() + "'", "unknown_parameter");
    if (f->refused && !it.value().is_null()) bad("'" + it.key() + "': " + f->refused, "unsupported_parameter");
  }
}

// The fields chat and text completions share: model, sampling, lengths, stop strings, streaming.
void parse_generation_fields(const json& j, ChatRequest& r, const RequestLimits& limits) {
  if (given(j, "model")) {
    if (!j["model"].is_string()) bad("'model' must be a string");
    r.model = j["model"].get<std::string>();
  }
  if (given(j, "temperature")) r.temperature = float(number(j["temperature"], "temperature", 0, 2));
  if (given(j, "top_p")) r.top_p = float(number(j["top_p"], "top_p", 0, 1));
  if (given(j, "min_p")) r.min_p = float(number(j["min_p"], "min_p", 0, 0.999));
  if (given(j, "top_k")) r.top_k = int(integer(j, "top_k", 0, 1 << 20));
  if (given(j, "presence_penalty")) r.presence_penalty = float(number(j["presence_penalty"], "presence_penalty", -2, 2));
  if (given(j, "frequency_penalty")) r.frequency_penalty = float(number(j["frequency_penalty"], "frequency_penalty", -2, 2));
  if (given(j, "repeat_penalty")) r.repeat_penalty = float(number(j["repeat_penalty"], "repeat_penalty", 0.001, 100));
  if (given(j, "repeat_last_n")) r.repeat_last_n = int(integer(j, "repeat_last_n", 0, 1 << 16));
  if (given(j, "logit_bias")) r.logit_bias = logit_bias_of(j["logit_bias"]);
  if (given(j, "n")) r.n = int(integer(j, "n", 1, limits.max_choices));
  if (given(j, "user")) {
    if (!j["user"].is_string()) bad("'user' must be a string");
    r.user = j["user"].get<std::string>();
  }
  if (given(j, "grammar")) {  // llama-server's: a GBNF grammar
    if (!j["grammar"].is_string()) bad("'grammar' must be a string (GBNF)");
    r.grammar = j["grammar"].get<std::string>();
    if (ckjit_grammar_check(r.grammar->c_str()) != CKJIT_OK) bad(std::string("'grammar': ") + ckjit_last_error(), "invalid_grammar");
  }
  r.max_tokens = limits.default_max_tokens;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!given(j, key)) continue;
    if (!j[key].is_number_integer()) bad(std::string("'") + key + "' must be an integer");
    const int64_t v = j[key].get<int64_t>();
    if (v < 1) bad(std::string("'") + key + "' must be at least 1");
    if (v > limits.max_tokens_limit)
      bad(std::string("'") + key + "' is " + std::to_string(v) + ", above the server's limit of " + std::to_string(limits.max_tokens_limit),
          "max_tokens_too_large");
    r.max_tokens = int(v);
  }
  if (given(j, "seed")) {
    if (!j["seed"].is_number_integer()) bad("'seed' must be an integer");
    r.seed = j["seed"].is_number_unsigned() ? j["seed"].get<uint64_t>() : uint64_t(j["seed"].get<int64_t>());
  }
  if (given(j, "stop")) {
    const json& s = j["stop"];
    if (s.is_string()) r.stop.push_back(s.get<std::string>());
    else if (s.is_array()) {
      for (const json& x : s) {
        if (!x.is_string()) bad("'stop' must be a string or an array of strings");
        r.stop.push_back(x.get<std::string>());
      }
    } else bad("'stop' must be a string or an array of strings");
    if (r.stop.size() > 8) bad("at most 8 stop strings");
    std::erase(r.stop, std::string());
  }
  if (given(j, "stream")) r.stream = boolean(j, "stream");
  if (given(j, "cache_prompt")) r.cache_prompt = boolean(j, "cache_prompt");
  if (given(j, "ignore_eos")) r.ignore_eos = boolean(j, "ignore_eos");
  if (given(j, "stream_options")) {
    const json& so = j["stream_options"];
    if (!so.is_object()) bad("'stream_options' must be an object");
    for (auto it = so.begin(); it != so.end(); ++it)
      if (it.key() != "include_usage") bad("'stream_options." + it.key() + "' is not supported", "unsupported_parameter");
    if (!r.stream) bad("'stream_options' applies to stream: true only");
    if (given(so, "include_usage")) r.include_usage = boolean(so, "include_usage");
  }
}

// ckjit's extension: this request's image token limits (rows per image) within the server's.
void image_limits(const json& j, ChatRequest& r, const RequestLimits& limits) {
  const bool lo = given(j, "image_min_tokens"), hi = given(j, "image_max_tokens");
  const int64_t cap = limits.image_max_tokens;
  r.image_max_tokens = hi ? int(integer(j, "image_max_tokens", 1, cap)) : limits.image_max_tokens;
  r.image_min_tokens = lo ? int(integer(j, "image_min_tokens", 1, cap)) : std::min(limits.image_min_tokens, r.image_max_tokens);
  if (r.image_min_tokens > r.image_max_tokens)
    bad("'image_min_tokens' (" + std::to_string(r.image_min_tokens) + ") is above 'image_max_tokens' (" + std::to_string(r.image_max_tokens) + ")");
}

}  // namespace

ChatRequest parse_chat_request(std::string_view body, const RequestLimits& limits) {
  const json j = parse_body(body);
  check_fields(j, chat_request_fields());
  ChatRequest r;
  if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty()) bad("'messages' must be a non-empty array");
  for (const json& m : j["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) bad("each message needs a string 'role'");
    for (auto it = m.begin(); it != m.end(); ++it)
      if (it.key() != "role" && it.key() != "content" && !it.value().is_null())
        bad("message field '" + it.key() + "' is not supported (messages take 'role' and 'content')", "unsupported_parameter");
    std::string role = m["role"].get<std::string>();
    if (role == "developer") role = "system";  // OpenAI's newer name for the system message
    if (role != "system" && role != "user" && role != "assistant") bad("unsupported role '" + role + "'");
    r.messages.push_back({role, content_of(m.contains("content") ? m["content"] : json(), r, limits)});
  }
  parse_generation_fields(j, r, limits);
  if (given(j, "logprobs")) r.logprobs = boolean(j, "logprobs");
  if (given(j, "top_logprobs")) {
    r.top_logprobs = int(integer(j, "top_logprobs", 0, 20));
    if (!r.logprobs) bad("'top_logprobs' needs 'logprobs': true");
  }
  image_limits(j, r, limits);
  if (given(j, "response_format")) {
    const json& rf = j["response_format"];
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) bad("'response_format' needs a string 'type'");
    r.json_schema = response_format_schema(rf);
    if (r.json_schema && r.grammar) bad("give 'response_format' json or 'grammar', not both");
    if (r.json_schema && ckjit_json_schema_check(r.json_schema->c_str()) != CKJIT_OK)
      bad(std::string("'response_format': ") + ckjit_last_error(), "invalid_json_schema");
  }
  return r;
}

const std::vector<FieldRule>& completion_request_fields() {
  static const std::vector<FieldRule> fields = {
      {"model", nullptr}, {"prompt", nullptr}, {"temperature", nullptr}, {"top_p", nullptr}, {"top_k", nullptr},
      {"min_p", nullptr}, {"max_tokens", nullptr}, {"seed", nullptr}, {"stop", nullptr}, {"stream", nullptr},
      {"stream_options", nullptr}, {"presence_penalty", nullptr}, {"frequency_penalty", nullptr}, {"repeat_penalty", nullptr},
      {"repeat_last_n", nullptr}, {"logit_bias", nullptr}, {"n", nullptr}, {"logprobs", nullptr}, {"user", nullptr},
      {"cache_prompt", nullptr}, {"ignore_eos", nullptr}, {"grammar", nullptr},
      {"echo", "echoing the prompt is not supported"}, {"suffix", "fill-in-the-middle (suffix) is not supported"},
      {"best_of", "best_of is not supported; send several requests"}};
  return fields;
}

ChatRequest parse_completion_request(std::string_view body, const RequestLimits& limits) {
  const json j = parse_body(body);
  check_fields(j, completion_request_fields());
  ChatRequest r;
  const json* p = j.contains("prompt") ? &j["prompt"] : nullptr;
  if (p && p->is_array() && p->size() == 1 && (*p)[0].is_string()) p = &(*p)[0];
  if (p && p->is_array()) bad("'prompt' as an array is one string only (several prompts: send several requests)", "unsupported_parameter");
  if (!p || !p->is_string() || p->get<std::string>().empty()) bad("'prompt' must be a non-empty string");
  r.raw_prompt = without_markers(p->get<std::string>());
  parse_generation_fields(j, r, limits);
  // logprobs is a count here (OpenAI's legacy completions): the chosen token's and the k most likely.
  if (given(j, "logprobs")) {
    r.logprobs = true;
    r.top_logprobs = int(integer(j, "logprobs", 0, 5));
  }
  return r;
}

}  // namespace ckjit::serve
