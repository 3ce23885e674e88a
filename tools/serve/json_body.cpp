#include "tools/serve/json_body.h"

#include <string>

#include "tools/serve/openai_request.h"

namespace ckjit::serve {

namespace {
struct TooDeep {};
}  // namespace

nlohmann::ordered_json parse_json_body(std::string_view body) {
  using json = nlohmann::ordered_json;
  // The callback sees every event with the count of containers open around it, before the parser
  // goes deeper: throwing there stops it at the limit, whatever follows in the body.
  const json::parser_callback_t limit = [](int depth, json::parse_event_t, json&) {
    if (depth >= kMaxJsonDepth) throw TooDeep{};
    return true;
  };
  json j;
  try {
    j = json::parse(body.begin(), body.end(), limit, /*allow_exceptions=*/false);
  } catch (const TooDeep&) {
    throw HttpError(400, "invalid_request_error", "invalid_json",
                    "the body nests arrays and objects deeper than " + std::to_string(kMaxJsonDepth) + " levels");
  }
  if (j.is_discarded()) throw HttpError(400, "invalid_request_error", "invalid_json", "the body is not valid JSON");
  if (!j.is_object()) throw HttpError(400, "invalid_request_error", "invalid_request", "the body must be a JSON object");
  return j;
}

}  // namespace ckjit::serve
