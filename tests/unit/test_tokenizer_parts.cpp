// Tokenizer building blocks: UTF-8 decoding as llama.cpp does it, Unicode classes, the Qwen2
// pre-tokenizer, the byte-level map, BPE on a tiny hand-made vocabulary, and the JSON reader.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/json.h"
#include "runtime/tokenizer/bpe.h"
#include "runtime/tokenizer/byte_level.h"
#include "runtime/tokenizer/pretokenize_qwen2.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/unicode.h"
#include "runtime/tokenizer/utf8_stream.h"

using namespace ckjit::tok;

namespace {

std::vector<std::string> split(const std::string& s) {
  const std::vector<uint32_t> cps = decode_utf8_lenient(s);
  std::vector<size_t> lengths;
  split_qwen2(cps, lengths);
  std::vector<std::string> pieces;
  size_t at = 0;
  for (size_t len : lengths) {
    std::string p;
    for (size_t k = 0; k < len; ++k) append_utf8(p, cps[at + k]);
    pieces.push_back(p);
    at += len;
  }
  CHECK(at == cps.size());
  return pieces;
}

using V = std::vector<std::string>;

}  // namespace

TEST_SUITE("tokenizer") {

TEST_CASE("UTF-8 decoding follows llama.cpp: each invalid byte becomes U+FFFD") {
  using C = std::vector<uint32_t>;
  CHECK(decode_utf8_lenient("a\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80") == C{'a', 0xE9, 0x4E2D, 0x1F600});
  CHECK(decode_utf8_lenient("\x80\xBF") == C{0xFFFD, 0xFFFD});               // stray continuation bytes
  CHECK(decode_utf8_lenient("\xE4\xB8") == C{0xFFFD, 0xFFFD});               // cut short
  CHECK(decode_utf8_lenient("\xE4\x41") == C{0xFFFD, 'A'});                  // bad continuation
  CHECK(decode_utf8_lenient("\xF8\x88\x80\x80\x80") == C(5, 0xFFFD));        // no 5-byte forms
  CHECK(decode_utf8_lenient("\xC0\xAF") == C{'/'});                          // overlong: accepted, like llama.cpp
  CHECK(decode_utf8_lenient("\xED\xA0\x80") == C{0xD800});                   // surrogate: accepted
  CHECK(decode_utf8_lenient("\xF4\x90\x80\x80") == C{0xFFFD});               // above U+10FFFF
  CHECK(decode_utf8_lenient("\xF7\xBF\xBF\xBF" "x") == C{0xFFFD, 'x'});
  CHECK(decode_utf8_lenient(std::string("\0a", 2)) == C{0, 'a'});
  CHECK(is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  for (const char* bad : {"\x80", "\xC0\xAF", "\xED\xA0\x80", "\xF4\x90\x80\x80", "\xE4\xB8", "\xFF"})
    CHECK_FALSE(is_valid_utf8(bad));
}

TEST_CASE("Unicode classes match llama.cpp's tables (Unicode 15.1)") {
  CHECK(codepoint_flags('a').letter());
  CHECK(codepoint_flags(0x4E2D).letter());
  CHECK(codepoint_flags(0x2EBF0).letter());  // CJK Extension I: new in Unicode 15.1
  CHECK(codepoint_flags(0x11F04).letter());  // Kawi: new in Unicode 15.0
  CHECK(codepoint_flags('7').number());
  CHECK(codepoint_flags(0x2160).number());  // Roman numeral (Nl)
  CHECK(codepoint_flags(0xB2).number());    // superscript two (No)
  CHECK(codepoint_category(0x301) == CodepointCategory::Mark);
  CHECK(codepoint_category(0x378) == CodepointCategory::Undefined);
  CHECK(codepoint_category(0xE000) == CodepointCategory::Control);  // private use is C*
  CHECK(codepoint_category(0x1F600) == CodepointCategory::Symbol);
  int n_ws = 0;
  for (uint32_t cp = 0; cp <= kMaxCodepoint; ++cp) n_ws += codepoint_flags(cp).whitespace();
  CHECK(n_ws == 25);
  CHECK(codepoint_flags(0x3000).whitespace());
  CHECK(codepoint_flags(0x85).whitespace());
  CHECK_FALSE(codepoint_flags(0x1C).whitespace());  // Python's isspace says yes, White_Space says no
  CHECK_FALSE(codepoint_flags(0x200B).whitespace());
}

TEST_CASE("Qwen2 pre-tokenizer splits like the spec's examples") {
  CHECK(split("Hello world") == V{"Hello", " world"});
  CHECK(split("Hello  world") == V{"Hello", " ", " world"});
  CHECK(split(" 123") == V{" ", "1", "2", "3"});
  CHECK(split("don't") == V{"don", "'t"});
  CHECK(split("I'M") == V{"I", "'M"});
  CHECK(split("3.14") == V{"3", ".", "1", "4"});
  CHECK(split("Hi!\n\nOk") == V{"Hi", "!\n\n", "Ok"});
  CHECK(split("a\n  b") == V{"a", "\n", " ", " b"});
  CHECK(split("we'll 're") == V{"we", "'ll", " '", "re"});
  CHECK(split("x  ") == V{"x", "  "});            // trailing run: \s+
  CHECK(split(" !!") == V{" !!"});
  CHECK(split("\tfoo") == V{"\tfoo"});            // any non-letter/number/CRLF prefixes a word
  CHECK(split("\u4e2d\u6587 \u65e5") == V{"\u4e2d\u6587", " \u65e5"});
  CHECK(split("e\u0301t\u00e9") == V{"e", "\u0301t\u00e9"});  // marks are not letters
  CHECK(split("a \r\n \r\nb") == V{"a", " \r\n \r\n", "b"});
  CHECK(split("\u3000\u3000x") == V{"\u3000", "\u3000x"});
  CHECK(split("") == V{});
}

TEST_CASE("byte-level map") {
  CHECK(byte_to_codepoint(' ') == 0x120);
  CHECK(byte_to_codepoint('\n') == 0x10A);
  CHECK(byte_to_codepoint(0x00) == 0x100);
  CHECK(byte_to_codepoint(0xAD) == 0x143);
  CHECK(byte_to_codepoint('A') == 'A');
  CHECK(byte_to_codepoint(0xFF) == 0xFF);
  for (int b = 0; b < 256; ++b) CHECK(codepoint_to_byte(byte_to_codepoint(uint8_t(b))) == b);
  CHECK_FALSE(codepoint_to_byte(0x144).has_value());
  CHECK_FALSE(codepoint_to_byte(0x20).has_value());
  CHECK(byte_level_encode(" hi\n") == "\xC4\xA0hi\xC4\x8A");
}

TEST_CASE("BPE merges by rank with the leftmost pair first on ties") {
  // Tiny vocab: single letters, then merges. "aaa": (a,a) at positions 0 and 1 have the same rank;
  // the leftmost wins -> "aa" + "a".
  std::vector<std::string> tokens = {"a", "b", "c", "aa", "ab", "bc", "abc", "aab"};
  BpeModel bpe(tokens, {"a a", "b c", "a b", "a bc", "aa b"});
  auto enc = [&](std::string_view s) {
    std::vector<int32_t> out;
    bpe.encode_piece(s, out);
    return out;
  };
  using I = std::vector<int32_t>;
  CHECK(enc("aaa") == I{3, 0});
  CHECK(enc("abc") == I{6});     // "b c" (rank 1) before "a b" (rank 2), then "a bc"
  CHECK(enc("aab") == I{7});     // "a a" first, then "aa b"
  CHECK(enc("cab") == I{2, 4});
  CHECK(enc("d") == I{});         // not in the vocab: llama.cpp drops bytes it cannot map
  CHECK(bpe.token_id("bc") == 5);
  CHECK(bpe.token_id("zz") == -1);
}

TEST_CASE("Tokenizer rejects unsupported or inconsistent vocabularies") {
  TokenizerVocab v;
  v.tokens = {"a", "b"};
  CHECK_NOTHROW(Tokenizer{v});
  auto bad = v;
  bad.pre = "llama3";
  CHECK_THROWS_AS(Tokenizer{bad}, ckjit::Error);
  bad = v;
  bad.model = "llama";
  CHECK_THROWS_AS(Tokenizer{bad}, ckjit::Error);
  bad = v;
  bad.token_types = {1};
  CHECK_THROWS_AS(Tokenizer{bad}, ckjit::Error);
  bad = v;
  bad.eos_id = 2;
  CHECK_THROWS_AS(Tokenizer{bad}, ckjit::Error);
  bad = v;
  bad.add_bos = true;
  CHECK_THROWS_AS(Tokenizer{bad}, ckjit::Error);
  bad = v;
  bad.tokens.clear();
  CHECK_THROWS_AS(Tokenizer{bad}, ckjit::Error);
  Tokenizer t(v);
  CHECK_THROWS_AS(t.token_to_piece(2), ckjit::Error);
  CHECK_THROWS_AS(t.token_to_piece(-1), ckjit::Error);
}

TEST_CASE("Utf8Stream holds back an unfinished UTF-8 sequence") {
  Utf8Stream s;
  CHECK(s.push("ab\xF0\x9F") == "ab");
  CHECK(s.push("\x98") == "");
  CHECK(s.push("\x80!") == "\xF0\x9F\x98\x80!");
  CHECK(s.push("\xE4") == "");
  CHECK(s.push("\xB8\xAD\xC3") == "\xE4\xB8\xAD");
  CHECK(s.flush() == "\xC3");
  CHECK(s.push("\x80\x80\xFF") == "\x80\x80\xFF");  // invalid bytes pass through
  CHECK(s.push("\xF0\x9F\x98\x80") == "\xF0\x9F\x98\x80");
  CHECK(s.flush().empty());
}

TEST_CASE("JSON reader") {
  using ckjit::parse_json;
  const auto v = parse_json(R"( {"a": [1, -2.5e1, true, false, null, 0.5], "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}} )");
  const auto& a = v.at("a").as_array();
  REQUIRE(a.size() == 6);
  CHECK(a[0].as_int() == 1);
  CHECK(a[1].as_number() == -25.0);
  CHECK(a[2].as_bool());
  CHECK(a[4].is_null());
  CHECK(v.at("s").as_string() == "x\"\\/\b\f\n\r\t\xC3\xA9\xF0\x9F\x98\x80");
  CHECK(v.at("o").as_object().empty());
  CHECK(!v.find("zz"));
  CHECK_THROWS_AS(v.at("zz"), ckjit::Error);
  CHECK_THROWS_AS(v.at("a").as_string(), ckjit::Error);
  CHECK(a[1].as_int() == -25);
  CHECK_THROWS_AS(a[5].as_int(), ckjit::Error);
  for (const char* bad : {"", "{", "[1,]", "{\"a\" 1}", "\"abc", "tru", "01x", "[1] 2", "\"\\x\"", "\"\\u12\"", "{1:2}", "-"})
    CHECK_THROWS_AS(parse_json(bad), ckjit::Error);
  CHECK_THROWS_AS(parse_json(std::string(100000, '[')), ckjit::Error);  // depth limit, no stack overflow
}

}  // TEST_SUITE
