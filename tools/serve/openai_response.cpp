#include "tools/serve/openai_response.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <random>

namespace ckjit::serve {

using json = nlohmann::json;

CompletionId new_completion_id(const std::string& model, bool text) {
  // Unique in this process and unlikely to repeat across replicas: a random prefix and a counter.
  static const uint64_t prefix = std::random_device{}() ^ (uint64_t(std::random_device{}()) << 32);
  static std::atomic<uint64_t> counter{0};
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s-%012llx%08llx", text ? "cmpl" : "chatcmpl", (unsigned long long)(prefix & 0xffffffffffffULL),
                (unsigned long long)counter.fetch_add(1));
  const int64_t now = std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return {buf, model, now, text};
}

namespace {
json usage_json(const Usage& u) {
  return {{"prompt_tokens", u.prompt_tokens},
          {"completion_tokens", u.completion_tokens},
          {"total_tokens", u.prompt_tokens + u.completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}
}  // namespace

json completion_json(const CompletionId& c, const std::string& content, const std::string& finish_reason, const Usage& u) {
  json choice = c.text ? json{{"index", 0}, {"text", content}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}
                       : json{{"index", 0}, {"message", {{"role", "assistant"}, {"content", content}}}, {"finish_reason", finish_reason}};
  return {{"id", c.id}, {"object", c.text ? "text_completion" : "chat.completion"}, {"created", c.created}, {"model", c.model},
          {"choices", json::array({choice})}, {"usage", usage_json(u)}};
}

json chunk_json(const CompletionId& c, const std::optional<std::string>& content, bool with_role,
                const std::optional<std::string>& finish_reason, const std::optional<Usage>& usage) {
  json delta = json::object();
  if (with_role) delta["role"] = "assistant";
  if (content) delta["content"] = *content;
  const json finish = finish_reason ? json(*finish_reason) : json(nullptr);
  json choice = c.text ? json{{"index", 0}, {"text", content.value_or("")}, {"logprobs", nullptr}, {"finish_reason", finish}}
                       : json{{"index", 0}, {"delta", delta}, {"finish_reason", finish}};
  json j = {{"id", c.id}, {"object", c.text ? "text_completion" : "chat.completion.chunk"}, {"created", c.created}, {"model", c.model},
            {"choices", json::array({choice})}};
  if (usage) j["usage"] = usage_json(*usage);
  return j;
}

json usage_chunk_json(const CompletionId& c, const Usage& u) {
  return {{"id", c.id}, {"object", c.text ? "text_completion" : "chat.completion.chunk"}, {"created", c.created}, {"model", c.model},
          {"choices", json::array()}, {"usage", usage_json(u)}};
}

json models_json(const std::string& model, int64_t created, const ModelMeta& meta) {
  const json m = {{"n_ctx", meta.n_ctx}, {"n_vocab", meta.n_vocab}, {"parallel", meta.parallel},
                  {"modalities", meta.vision ? json::array({"text", "image"}) : json::array({"text"})}};
  return {{"object", "list"},
          {"data", json::array({{{"id", model}, {"object", "model"}, {"created", created}, {"owned_by", "ckjit"}, {"meta", m}}})}};
}

json error_json(const std::string& message, const std::string& type, const std::string& code) {
  return {{"error", {{"message", message}, {"type", type}, {"code", code}}}};
}

std::string error_type_for(int status) {
  if (status == 401) return "authentication_error";
  if (status == 404) return "not_found_error";
  if (status == 413) return "invalid_request_error";
  if (status == 429) return "rate_limit_error";
  if (status >= 500) return "server_error";
  return "invalid_request_error";
}

std::string sse(const json& j) {
  // Invalid UTF-8 (a token cut mid-character never reaches here, but be safe) is replaced, not thrown.
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

std::string StopMatcher::push(const std::string& text) {
  if (hit_) return "";
  pending_ += text;
  for (const std::string& s : stops_) {
    const size_t at = pending_.find(s);
    if (at != std::string::npos) {
      hit_ = true;
      std::string out = pending_.substr(0, at);
      pending_.clear();
      return out;
    }
  }
  // Keep the longest tail that is a proper prefix of some stop string.
  size_t keep = 0;
  for (const std::string& s : stops_)
    for (size_t n = std::min(s.size() - 1, pending_.size()); n > keep; --n)
      if (pending_.compare(pending_.size() - n, n, s, 0, n) == 0) {
        keep = n;
        break;
      }
  std::string out = pending_.substr(0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
  return out;
}

std::string StopMatcher::flush() {
  std::string out;
  out.swap(pending_);
  return hit_ ? "" : out;
}

}  // namespace ckjit::serve
