#pragma once
// The JSON the server answers with, shaped like OpenAI's (and llama-server's): a chat.completion,
// its streamed chat.completion.chunk pieces as server-sent events, /v1/models, and error bodies.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tools/serve/token_logprobs.h"

namespace ckjit::serve {

struct Usage {
  int64_t prompt_tokens = 0, completion_tokens = 0;
  int64_t cached_tokens = 0;  // of prompt_tokens: rows reused from the session's cache (prompt_tokens_details)
};

// What every object of one completion shares.
struct CompletionId {
  std::string id;     // "chatcmpl-..." ("cmpl-..." for a text completion)
  std::string model;
  int64_t created = 0;  // Unix seconds
  bool text = false;    // /v1/completions: text_completion objects, choices with "text" instead of a message
};

CompletionId new_completion_id(const std::string& model, bool text = false);

// One answer of a completion ('n' of them).
struct Choice {
  int index = 0;
  std::string content, finish_reason;
  std::optional<std::vector<TokenLogprob>> logprobs;  // when the request asked for them
};

nlohmann::json completion_json(const CompletionId& c, const std::vector<Choice>& choices, const Usage& u);
// A streamed piece of choice `index`: the first carries the role, the last the finish reason;
// logprobs (when asked for) of the tokens whose text the piece completes; usage only when given.
struct ChunkPiece {
  int index = 0;
  std::optional<std::string> content;
  bool with_role = false;
  std::optional<std::string> finish_reason;
  const std::vector<TokenLogprob>* logprobs = nullptr;
};
nlohmann::json chunk_json(const CompletionId& c, const ChunkPiece& piece, const std::optional<Usage>& usage = std::nullopt);
// stream_options.include_usage: the stream's last chunk before [DONE], empty choices and the usage.
nlohmann::json usage_chunk_json(const CompletionId& c, const Usage& u);
// What /v1/models tells about the model beside OpenAI's fields (as llama-server's "meta").
struct ModelMeta {
  int64_t n_ctx = 0, n_vocab = 0;
  bool vision = false;
  int parallel = 1;
};
nlohmann::json models_json(const std::string& model, int64_t created, const ModelMeta& meta = {});
nlohmann::json error_json(const std::string& message, const std::string& type, const std::string& code);
// A 500's body: "internal error #N" for the client, the cause with N on the server's stderr.
nlohmann::json internal_error_json(const char* cause);
// The error type OpenAI uses for an HTTP status.
std::string error_type_for(int status);

// One server-sent event line: "data: <json>\n\n"; sse_done() is the stream's last one.
std::string sse(const nlohmann::json& j);
inline std::string sse_done() { return "data: [DONE]\n\n"; }

// Holds back generated text that might be the start of a stop string, so a stop string never
// reaches the client, not even split across tokens.
class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}
  // Adds generated text; returns what may be sent now. After a stop string, hit() is true and the
  // text from the stop string on is dropped.
  std::string push(const std::string& text);
  std::string flush();  // the held-back text, at the end of a generation without a hit
  bool hit() const { return hit_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool hit_ = false;
};

}  // namespace ckjit::serve
