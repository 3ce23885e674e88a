#pragma once
// llama-server's POST /tokenize and POST /detokenize: the model's tokenizer over HTTP, for clients
// that count or build prompts themselves (4xx OpenAI error bodies for bad input).
namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace ckjit::serve {

struct ServerState;
// {"content": text, "add_special": false, "parse_special": true, "with_pieces": false} ->
// {"tokens": [ids]} or, with_pieces, {"tokens": [{"id": id, "piece": text}]}.
void handle_tokenize(const ServerState& st, const httplib::Request& req, httplib::Response& res);
// {"tokens": [ids]} -> {"content": text} (special tokens' text included).
void handle_detokenize(const ServerState& st, const httplib::Request& req, httplib::Response& res);

}  // namespace ckjit::serve
