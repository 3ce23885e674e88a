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

namespace {

// OpenAI's "bytes": the token's bytes as integers 0..255 (its text may be part of a character).
std::vector<int> byte_list(const std::string& bytes) {
  std::vector<int> out;
  for (unsigned char b : bytes) out.push_back(b);
  return out;
}

// Chat: {"content": [{token, logprob, bytes, top_logprobs: [...]}], "refusal": null}.
json chat_logprobs_json(const std::vector<TokenLogprob>& tokens) {
  json content = json::array();
  for (const TokenLogprob& t : tokens) {
    json top = json::array();
    for (const TokenAlternative& a : t.top) top.push_back({{"token", a.bytes}, {"logprob", a.logprob}, {"bytes", byte_list(a.bytes)}});
    content.push_back({{"token", t.chosen.bytes}, {"logprob", t.chosen.logprob}, {"bytes", byte_list(t.chosen.bytes)}, {"top_logprobs", top}});
  }
  return {{"content", content}, {"refusal", nullptr}};
}

// Legacy text completions: parallel arrays, top_logprobs as {token: logprob} objects.
json text_logprobs_json(const std::vector<TokenLogprob>& tokens) {
  json toks = json::array(), lps = json::array(), tops = json::array(), offsets = json::array();
  for (const TokenLogprob& t : tokens) {
    toks.push_back(t.chosen.bytes);
    lps.push_back(t.chosen.logprob);
    json top = json::object();
    for (const TokenAlternative& a : t.top) top[a.bytes] = a.logprob;
    tops.push_back(top);
    offsets.push_back(t.text_start);
  }
  return {{"tokens", toks}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offsets}};
}

json logprobs_json(const CompletionId& c, const std::vector<TokenLogprob>* tokens) {
  if (!tokens) return nullptr;
  return c.text ? text_logprobs_json(*tokens) : chat_logprobs_json(*tokens);
}

}  // namespace

json completion_json(const CompletionId& c, const std::vector<Choice>& choices, const Usage& u) {
  json out = json::array();
  for (const Choice& ch : choices) {
    const json lp = logprobs_json(c, ch.logprobs ? &*ch.logprobs : nullptr);
    out.push_back(c.text ? json{{"index", ch.index}, {"text", ch.content}, {"logprobs", lp}, {"finish_reason", ch.finish_reason}}
                         : json{{"index", ch.index}, {"message", {{"role", "assistant"}, {"content", ch.content}}}, {"logprobs", lp},
                                {"finish_reason", ch.finish_reason}});
  }
  return {{"id", c.id}, {"object", c.text ? "text_completion" : "chat.completion"}, {"created", c.created}, {"model", c.model},
          {"choices", out}, {"usage", usage_json(u)}};
}

json chunk_json(const CompletionId& c, const ChunkPiece& p, const std::optional<Usage>& usage) {
  json delta = json::object();
  if (p.with_role) delta["role"] = "assistant";
  if (p.content) delta["content"] = *p.content;
  const json finish = p.finish_reason ? json(*p.finish_reason) : json(nullptr);
  const json lp = logprobs_json(c, p.logprobs);
  json choice = c.text ? json{{"index", p.index}, {"text", p.content.value_or("")}, {"logprobs", lp}, {"finish_reason", finish}}
                       : json{{"index", p.index}, {"delta", delta}, {"logprobs", lp}, {"finish_reason", finish}};
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

json internal_error_json(const char* cause) {
  // The cause (a library's exception text) goes to the log only; the client gets an id to quote.
  static std::atomic<uint64_t> counter{0};
  const uint64_t id = counter.fetch_add(1) + 1;
  std::fprintf(stderr, "ckjit serve: internal error #%llu: %s\n", (unsigned long long)id, cause);
  std::fflush(stderr);
  return error_json("internal error #" + std::to_string(id) + " (the server's log names the cause)", "server_error", "internal");
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
