#pragma once
// Request bodies as JSON, with the nesting limit enforced while parsing: nlohmann's parser keeps
// its own stack, but dump() and comparisons recurse, so a 10^6-deep array that got past the parser
// would end the whole server on a stack overflow.
#include <nlohmann/json.hpp>

#include <string_view>

namespace ckjit::serve {

constexpr int kMaxJsonDepth = 64;  // arrays and objects inside one another; deeper bodies are a 400

// The body as a JSON object (members in the order sent); a 400 HttpError (invalid_json) for
// malformed or too-deep JSON and for a value that is not an object.
nlohmann::ordered_json parse_json_body(std::string_view body);

}  // namespace ckjit::serve
