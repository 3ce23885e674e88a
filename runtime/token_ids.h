#pragma once
// Token id lists as people write them (`ckjit run --force FILE`, peer-cli's format): decimal ids
// separated by spaces, tabs, newlines and/or commas.
#include <cstdint>
#include <string>
#include <vector>

namespace ckjit {

// Error naming `what` (e.g. "--force ids.txt") for any other character, an id over 9 digits, or no id.
std::vector<int32_t> parse_token_ids(const std::string& text, const std::string& what);

}  // namespace ckjit
