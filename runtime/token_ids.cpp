#include "runtime/token_ids.h"

#include "runtime/error.h"

namespace ckjit {

std::vector<int32_t> parse_token_ids(const std::string& text, const std::string& what) {
  std::vector<int32_t> ids;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    if (cur.size() > 9) throw Error(what + ": token id '" + cur + "' is too large");
    ids.push_back(std::stoi(cur));  // at most 9 digits: fits
    cur.clear();
  };
  for (char c : text) {
    if (c >= '0' && c <= '9') cur += c;
    else if (c == ',' || c == ' ' || c == '\n' || c == '\t' || c == '\r') flush();
    else
      throw Error(what + ": unexpected character '" + (c >= 0x20 && c < 0x7f ? std::string(1, c) : "\\x" + std::to_string(int(uint8_t(c)))) +
                  "' (want ids separated by spaces or commas)");
  }
  flush();
  if (ids.empty()) throw Error(what + ": no token ids");
  return ids;
}

}  // namespace ckjit
