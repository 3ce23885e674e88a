#pragma once
// POST /v1/chat/completions (and /v1/completions): validation up front (4xx before any work), then a session from the
// pool, images from the cache or the vision tower, generation with stop strings, and the answer
// as one JSON object or as server-sent events.
namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ckjit::serve {

struct ServerState;
void handle_chat_completion(ServerState& st, const httplib::Request& req, httplib::Response& res);
// POST /v1/completions (OpenAI's legacy text completions): the prompt as given, the same sampling
// fields (tools/serve/README.md), text_completion objects.
void handle_text_completion(ServerState& st, const httplib::Request& req, httplib::Response& res);

}  // namespace ckjit::serve
