// libFuzzer target for structured output's schema compiler and automaton: the input is a JSON
// Schema, then a 0 byte, then a text. The schema compiles or is refused with an Error (invalid
// argument); a compiled schema's DFA walks the text, and a text it accepts must parse as JSON and
// validate against the schema (tests/unit/json_schema_check.h, a validator written apart from the
// compiler). Any other exception, a disagreement, a crash or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/error.h"
#include "runtime/structured/json_schema.h"
#include "tests/unit/json_schema_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t cut = in.find('\0');
  const std::string schema = in.substr(0, cut), text = cut == std::string::npos ? std::string() : in.substr(cut + 1);
  ckjit::structured::Dfa dfa = [&] {
    try {
      return ckjit::structured::compile_json_schema(schema);
    } catch (const ckjit::Error& e) {
      if (e.kind() != ckjit::ErrorKind::invalid_argument) std::abort();
      return ckjit::structured::Dfa{};
    }
  }();
  if (dfa.n_states() == 0) return 0;
  const int32_t s = dfa.walk(0, text);
  if (s == ckjit::structured::Dfa::kDead || !dfa.accepting(s)) return 0;
  const std::string why = schemacheck::check(text, schema);
  if (!why.empty()) {
    std::fprintf(stderr, "accepted text does not validate: %s\ntext: %s\n", why.c_str(), text.c_str());
    std::abort();
  }
  return 0;
}
