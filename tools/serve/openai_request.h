#pragma once
// An OpenAI /v1/chat/completions request body parsed and validated into a plain struct. Every
// problem is an HttpError (a 4xx status and an OpenAI-style error type/code), never a crash.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckjit::serve {

struct HttpError : std::runtime_error {
  HttpError(int status, std::string type, std::string code, const std::string& message)
      : std::runtime_error(message), status(status), type(std::move(type)), code(std::move(code)) {}
  int status;
  std::string type, code;
};

struct ChatMessage {
  std::string role;     // system (also the request's "developer"), user, assistant
  std::string content;  // text parts joined; "<__media__>" where each image goes
};

// Sampling defaults are llama-server's (tools/serve/README.md lists every field).
struct ChatRequest {
  std::optional<std::string> model;
  std::vector<ChatMessage> messages;
  std::vector<std::string> images;  // image bytes, in marker order
  std::vector<std::pair<int32_t, int32_t>> image_sizes;  // their width and height from the headers (checked)
  float temperature = 0.8f, top_p = 0.95f, min_p = 0.05f;
  int top_k = 40;
  float repeat_penalty = 1.0f, frequency_penalty = 0.0f, presence_penalty = 0.0f;
  int repeat_last_n = 64;
  std::vector<std::pair<int32_t, float>> logit_bias;  // token id, bias in [-100, 100]
  int max_tokens = 0;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  bool stream = false;
  bool ignore_eos = false;     // llama-server's extension: generate max_tokens tokens
  bool cache_prompt = true;    // llama-server's extension: reuse a session's KV rows of a shared prompt prefix
  bool include_usage = false;  // stream_options.include_usage: a last chunk with usage
  std::optional<std::string> json_schema;  // response_format json_object / json_schema: the schema's JSON text
  std::optional<std::string> grammar;      // llama-server's "grammar": GBNF text
  std::optional<std::string> raw_prompt;   // /v1/completions: the prompt as given (no chat template, no images)
  int n = 1;                  // choices, generated one after another on one session (the prompt prefilled once)
  bool logprobs = false;      // each token's log probability (chat: logprobs: true; text: logprobs: k)
  int top_logprobs = 0;       // and the k most likely tokens at each step
  int image_min_tokens = 8, image_max_tokens = 4096;  // rows per image: the server's, or the request's (an extension)
  std::string user;  // OpenAI's end-user id: with --no-cache-sharing, the scope of what is reused
};

struct RequestLimits {
  int default_max_tokens = 256;
  int max_tokens_limit = 4096;
  // --allow-local-images DIR, resolved (realpath) at start: file:// URLs and absolute paths are read
  // only when they name a regular file under it after every link and '..' is resolved; empty: 403.
  std::string local_image_root;
  size_t max_local_image_bytes = size_t(32) << 20;  // --max-body-mb: a file is no bigger than a body
  int64_t max_image_pixels = int64_t(4096) * 4096;
  size_t max_images = 16;
  int max_choices = 16;                               // most 'n'
  int image_min_tokens = 8, image_max_tokens = 4096;  // the server's; a request may lower the max, not raise it
};

// Parses body (JSON) against the limits; images are resolved (data: URIs decoded, local files read
// when allowed) and their header dimensions checked against max_image_pixels before any decoding.
// Every field is honoured or refused: an unknown field, or one ckjit does not implement (tools,
// audio, ...), is a 400 naming it, never silently ignored.
ChatRequest parse_chat_request(std::string_view body, const RequestLimits& limits);

// A /v1/completions body (OpenAI's legacy text completions): one prompt string, used as given.
ChatRequest parse_completion_request(std::string_view body, const RequestLimits& limits);

// The request fields and what ckjit does with each, for the README's table and the errors.
struct FieldRule {
  const char* name;
  const char* refused;  // nullptr: honoured; else why a request carrying it (non-null) gets a 400
};
const std::vector<FieldRule>& chat_request_fields();
const std::vector<FieldRule>& completion_request_fields();

// RFC 4648 base64 (whitespace ignored); throws HttpError 400 on anything else.
std::string decode_base64(std::string_view text);

// The bytes of an image_url: a data:image/...;base64 URI, or (allowed only) a file:// URL or path.
std::string resolve_image_url(std::string_view url, const RequestLimits& limits);

// The canonical form of an --allow-local-images folder (throws std::runtime_error naming the flag
// when it is no directory).
std::string canonical_image_root(const std::string& dir);

}  // namespace ckjit::serve
