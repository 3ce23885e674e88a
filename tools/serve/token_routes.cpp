#include "tools/serve/token_routes.h"

#include <httplib.h>
#include <nlohmann/json.hpp>

#include "tools/serve/json_body.h"
#include "tools/serve/openai_response.h"
#include "tools/serve/server_state.h"

namespace ckjit::serve {

namespace {

using json = nlohmann::ordered_json;

json body_of(const httplib::Request& req) { return parse_json_body(req.body); }

bool flag(const json& j, const char* key, bool fallback) {
  if (!j.contains(key) || j[key].is_null()) return fallback;
  if (!j[key].is_boolean()) throw HttpError(400, "invalid_request_error", "invalid_request", std::string("'") + key + "' must be a boolean");
  return j[key].get<bool>();
}

void only(const json& j, std::initializer_list<const char*> keys) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    bool known = false;
    for (const char* k : keys) known = known || it.key() == k;
    if (!known) throw HttpError(400, "invalid_request_error", "unknown_parameter", "unrecognized request argument supplied: '" + it.key() + "'");
  }
}

std::string piece_of(const ServerState& st, int32_t id) {
  size_t n = 0;
  std::string buf(64, '\0');
  ckjit_status s = ckjit_token_to_piece(st.model, id, 1, buf.data(), buf.size(), &n);
  if (s == CKJIT_ERR_BUFFER_TOO_SMALL) {
    buf.assign(n, '\0');
    s = ckjit_token_to_piece(st.model, id, 1, buf.data(), buf.size(), &n);
  }
  if (s != CKJIT_OK) throw HttpError(500, "server_error", "internal", ckjit_last_error());
  buf.resize(n);
  return buf;
}

template <class F>
void answer(httplib::Response& res, F&& f) {
  try {
    res.set_content(f().dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
  } catch (const HttpError& e) {
    res.status = e.status;
    res.set_content(error_json(e.what(), e.type, e.code).dump(), "application/json");
  }
}

}  // namespace

void handle_tokenize(const ServerState& st, const httplib::Request& req, httplib::Response& res) {
  answer(res, [&] {
    const json j = body_of(req);
    only(j, {"content", "add_special", "parse_special", "with_pieces"});
    if (!j.contains("content") || !j["content"].is_string())
      throw HttpError(400, "invalid_request_error", "invalid_request", "'content' must be a string");
    // Qwen3's tokenizer adds no BOS: add_special changes nothing, but is accepted as llama-server does.
    flag(j, "add_special", false);
    const bool special = flag(j, "parse_special", true), pieces = flag(j, "with_pieces", false);
    const std::string text = j["content"].get<std::string>();
    size_t n = 0;
    ckjit_tokenize(st.model, text.c_str(), special ? 1 : 0, nullptr, 0, &n);
    std::vector<int32_t> ids(n);
    if (ckjit_tokenize(st.model, text.c_str(), special ? 1 : 0, ids.data(), ids.size(), &n) != CKJIT_OK)
      throw HttpError(400, "invalid_request_error", "invalid_request", ckjit_last_error());
    json out = json::array();
    for (int32_t id : ids) out.push_back(pieces ? json{{"id", id}, {"piece", piece_of(st, id)}} : json(id));
    return json{{"tokens", out}};
  });
}

void handle_detokenize(const ServerState& st, const httplib::Request& req, httplib::Response& res) {
  answer(res, [&] {
    const json j = body_of(req);
    only(j, {"tokens"});
    if (!j.contains("tokens") || !j["tokens"].is_array())
      throw HttpError(400, "invalid_request_error", "invalid_request", "'tokens' must be an array of token ids");
    const int32_t n_vocab = ckjit_model_n_vocab(st.model);
    std::vector<int32_t> ids;
    for (const json& t : j["tokens"]) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= n_vocab)
        throw HttpError(400, "invalid_request_error", "invalid_request",
                        "'tokens' must hold token ids in 0.." + std::to_string(n_vocab - 1));
      ids.push_back(int32_t(t.get<int64_t>()));
    }
    size_t need = 0;
    ckjit_detokenize(st.model, ids.data(), ids.size(), 1, nullptr, 0, &need);
    std::string buf(std::max<size_t>(need, 1), '\0');
    if (ckjit_detokenize(st.model, ids.data(), ids.size(), 1, buf.data(), buf.size(), &need) != CKJIT_OK)
      throw HttpError(500, "server_error", "internal", ckjit_last_error());
    buf.resize(need > 0 ? need - 1 : 0);
    return json{{"content", buf}};
  });
}

}  // namespace ckjit::serve
