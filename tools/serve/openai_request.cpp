#include "tools/serve/openai_request.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

#include "graph/bridge.h"
#include "include/ckjit.h"

namespace ckjit::serve {

namespace {

using json = nlohmann::json;

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

void check_dimensions(const std::string& bytes, size_t index, const RequestLimits& limits) {
  int32_t w = 0, h = 0;
  if (ckjit_image_info(bytes.data(), bytes.size(), &w, &h) != CKJIT_OK)
    bad("image " + std::to_string(index + 1) + ": " + ckjit_last_error(), "invalid_image");
  if (int64_t(w) * h > limits.max_image_pixels)
    throw HttpError(400, "invalid_request_error", "image_too_large",
                    "image " + std::to_string(index + 1) + " is " + std::to_string(w) + " x " + std::to_string(h) +
                        " pixels, above the server's limit of " + std::to_string(limits.max_image_pixels) + " pixels");
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
      check_dimensions(out.images.back(), out.images.size() - 1, limits);
      text += graph::kMediaMarker;
    } else {
      bad("unsupported content part type '" + type + "'");
    }
  }
  return text;
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
  if (!limits.allow_local_images)
    throw HttpError(403, "invalid_request_error", "local_images_disabled",
                    "local image paths are refused (start the server with --allow-local-images)");
  std::ifstream in(path, std::ios::binary);
  if (!in) bad("cannot read the image file '" + path + "'", "invalid_image");
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ChatRequest parse_chat_request(std::string_view body, const RequestLimits& limits) {
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) bad("the body is not valid JSON", "invalid_json");
  if (!j.is_object()) bad("the body must be a JSON object");
  ChatRequest r;
  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string()) bad("'model' must be a string");
    r.model = j["model"].get<std::string>();
  }
  if (!j.contains("messages") || !j["messages"].is_array() || j["messages"].empty()) bad("'messages' must be a non-empty array");
  for (const json& m : j["messages"]) {
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) bad("each message needs a string 'role'");
    const std::string role = m["role"].get<std::string>();
    if (role != "system" && role != "user" && role != "assistant") bad("unsupported role '" + role + "'");
    r.messages.push_back({role, content_of(m.contains("content") ? m["content"] : json(), r, limits)});
  }
  if (j.contains("temperature") && !j["temperature"].is_null()) r.temperature = float(number(j["temperature"], "temperature", 0, 2));
  if (j.contains("top_p") && !j["top_p"].is_null()) r.top_p = float(number(j["top_p"], "top_p", 0, 1));
  r.max_tokens = limits.default_max_tokens;
  for (const char* key : {"max_tokens", "max_completion_tokens"}) {
    if (!j.contains(key) || j[key].is_null()) continue;
    if (!j[key].is_number_integer()) bad(std::string("'") + key + "' must be an integer");
    const int64_t v = j[key].get<int64_t>();
    if (v < 1) bad(std::string("'") + key + "' must be at least 1");
    if (v > limits.max_tokens_limit)
      bad(std::string("'") + key + "' is " + std::to_string(v) + ", above the server's limit of " + std::to_string(limits.max_tokens_limit),
          "max_tokens_too_large");
    r.max_tokens = int(v);
  }
  if (j.contains("seed") && !j["seed"].is_null()) {
    if (!j["seed"].is_number_integer()) bad("'seed' must be an integer");
    r.seed = j["seed"].is_number_unsigned() ? j["seed"].get<uint64_t>() : uint64_t(j["seed"].get<int64_t>());
  }
  if (j.contains("stop") && !j["stop"].is_null()) {
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
  if (j.contains("stream") && !j["stream"].is_null()) {
    if (!j["stream"].is_boolean()) bad("'stream' must be a boolean");
    r.stream = j["stream"].get<bool>();
  }
  if (j.contains("cache_prompt") && !j["cache_prompt"].is_null()) {
    if (!j["cache_prompt"].is_boolean()) bad("'cache_prompt' must be a boolean");
    r.cache_prompt = j["cache_prompt"].get<bool>();
  }
  if (j.contains("ignore_eos") && !j["ignore_eos"].is_null()) {
    if (!j["ignore_eos"].is_boolean()) bad("'ignore_eos' must be a boolean");
    r.ignore_eos = j["ignore_eos"].get<bool>();
  }
  if (j.contains("stream_options") && j["stream_options"].is_object() && j["stream_options"].contains("include_usage"))
    r.include_usage = j["stream_options"]["include_usage"].is_boolean() && j["stream_options"]["include_usage"].get<bool>();
  return r;
}

}  // namespace ckjit::serve
