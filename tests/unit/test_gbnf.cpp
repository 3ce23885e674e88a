// GBNF grammars (llama.cpp's format) for structured output: what a regular grammar admits, classes
// over code points as UTF-8, and errors that name the place.
#include <doctest/doctest.h>

#include <string>

#include "dfa_accepts.h"
#include "runtime/error.h"
#include "runtime/structured/gbnf.h"

using namespace ckjit;
using namespace ckjit::structured;

namespace {

bool accepts(const Dfa& d, const std::string& text) { return dfa_accepts(d, text); }

std::string error_of(const std::string& g) {
  try {
    compile_gbnf(g);
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::invalid_argument);
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("gbnf: rules / alternatives / groups / repetitions / comments and rules over several lines" * doctest::test_suite("structured")) {
  const Dfa d = compile_gbnf(R"(# an invoice line
root ::= item ( "," ws item ){0,2} "."
item ::=
    [a-z]+ "=" num   # name=value
  | "none"
num  ::= "-"? [0-9]{1,3} ("." [0-9]+)?
ws   ::= [ \t]*
)");
  for (const char* ok : {"a=1.", "none.", "qty=-12.5, none,\tx=999.", "a=1,b=2,c=3."}) CHECK_MESSAGE(accepts(d, ok), ok);
  for (const char* bad : {"a=1", "A=1.", "a=1234.", "a=1,b=2,c=3,d=4.", "a=.", "none,.", ""}) CHECK_MESSAGE(!accepts(d, bad), bad);
}

TEST_CASE("gbnf: literals and classes are code points written as UTF-8 / negated classes and '.' skip surrogates" * doctest::test_suite("structured")) {
  const Dfa d = compile_gbnf(R"(root ::= "\"" [^"\\\n]* "\"" " " [α-ω] "€" . "\x41\u00e9\U0001F600")");
  CHECK(accepts(d, "\"h\xC3\xA9llo \xF0\x9F\x98\x80\" \xCE\xB2\xE2\x82\xAC" "zA\xC3\xA9\xF0\x9F\x98\x80"));
  CHECK(accepts(d, "\"\" \xCF\x89\xE2\x82\xAC\xF4\x8F\xBF\xBF" "A\xC3\xA9\xF0\x9F\x98\x80"));  // '.' takes U+10FFFF
  CHECK_FALSE(accepts(d, "\"a\"b\" \xCE\xB2\xE2\x82\xAC" "zA\xC3\xA9\xF0\x9F\x98\x80"));       // '"' inside
  CHECK_FALSE(accepts(d, "\"\" \xCE\xB2\xE2\x82\xAC\xED\xA0\x80" "A\xC3\xA9\xF0\x9F\x98\x80"));  // a surrogate for '.'
  CHECK_FALSE(accepts(d, "\"\" a\xE2\x82\xAC" "zA\xC3\xA9\xF0\x9F\x98\x80"));                    // 'a' is not in [α-ω]
  // Every code point of a range that crosses encoding lengths, and none outside it.
  const Dfa wide = compile_gbnf(R"(root ::= [\x7e-\u0801])");
  auto utf8 = [](uint32_t cp) {
    std::string s;
    if (cp < 0x80) s += char(cp);
    else if (cp < 0x800) s += char(0xC0 | cp >> 6), s += char(0x80 | (cp & 0x3F));
    else s += char(0xE0 | cp >> 12), s += char(0x80 | (cp >> 6 & 0x3F)), s += char(0x80 | (cp & 0x3F));
    return s;
  };
  int wrong = 0;
  for (uint32_t cp = 0; cp < 0x1000; ++cp) wrong += accepts(wide, utf8(cp)) != (cp >= 0x7e && cp <= 0x801);
  CHECK(wrong == 0);
}

TEST_CASE("gbnf: recursion / undefined rules / no root and bad syntax are errors naming the place" * doctest::test_suite("structured")) {
  CHECK(error_of("root ::= \"(\" root \")\" | \"x\"").find("refers back to itself") != std::string::npos);
  CHECK(error_of("root ::= a\na ::= b\nb ::= a").find("recursive") != std::string::npos);
  CHECK(error_of("root ::= missing").find("'missing' is not defined") != std::string::npos);
  CHECK(error_of("start ::= \"x\"").find("no 'root'") != std::string::npos);
  CHECK(error_of("root ::= \"x\"\nroot ::= \"y\"").find("defined twice") != std::string::npos);
  CHECK(error_of("root ::= \"x").find("line 1, column 10: an unterminated") != std::string::npos);
  CHECK(error_of("root ::= \"a\"\n  x ::= [b-a]").find("line 2") != std::string::npos);
  CHECK(error_of("root ::= \"\\q\"").find("unknown escape") != std::string::npos);
  CHECK(error_of("root ::= \"a\"{3,1}").find("n below m") != std::string::npos);
  CHECK(error_of("root ::= \"a\"{5000}").find("above 1024") != std::string::npos);
  CHECK(error_of("root ::= [^\\x00-\\U0010FFFF]").find("matches no character") != std::string::npos);
  CHECK(error_of("root = \"a\"").find("'::='") != std::string::npos);
  CHECK(error_of("root ::= (\"a\"").find("')'") != std::string::npos);
  CHECK(error_of("root ::= [a-z]{1000}{1000}").find("too large") != std::string::npos);
  CHECK(error_of("root ::= \"a\"?{200}{200}").find("too large") != std::string::npos);  // long closures: bounded in total
  CHECK(error_of("root ::= \"a\"" + std::string(100000, '?')).find("repetition operators") != std::string::npos);
  CHECK(error_of("root ::= \"\xED\xA0\x80\"").find("not a Unicode scalar value") != std::string::npos);  // a raw surrogate
  CHECK(error_of("root ::= [\xF5\x80\x80\x80]").find("invalid UTF-8") != std::string::npos);
}
