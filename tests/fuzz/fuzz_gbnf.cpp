// libFuzzer target for GBNF grammars (runtime/structured/gbnf.h): the input is a grammar, a 0 byte,
// then a text. The grammar compiles or is refused with an Error (invalid argument); a compiled
// grammar's DFA walks the text, and a text it accepts must be valid UTF-8 (every terminal is a code
// point). Any other exception, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "runtime/error.h"
#include "runtime/structured/gbnf.h"

namespace {

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + size_t(n) > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) {
      const auto b = static_cast<unsigned char>(s[i + size_t(k)]);
      if ((b & 0xC0) != 0x80) return false;
      cp = cp << 6 | (b & 0x3F);
    }
    const uint32_t min = n == 1 ? 0 : n == 2 ? 0x80 : n == 3 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += size_t(n);
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t cut = in.find('\0');
  const std::string grammar = in.substr(0, cut), text = cut == std::string::npos ? std::string() : in.substr(cut + 1);
  ckjit::structured::Dfa dfa;
  try {
    dfa = ckjit::structured::compile_gbnf(grammar);
  } catch (const ckjit::Error& e) {
    if (e.kind() != ckjit::ErrorKind::invalid_argument) std::abort();
    return 0;
  }
  const int32_t s = dfa.walk(0, text);
  if (s != ckjit::structured::Dfa::kDead && dfa.accepting(s) && !valid_utf8(text)) std::abort();
  return 0;
}
