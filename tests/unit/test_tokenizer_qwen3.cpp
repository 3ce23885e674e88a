// The real Qwen3 tokenizer against llama.cpp: token ids for the committed corpus
// (tests/fixtures/tokenizer/corpus.jsonl, produced by llama.cpp, see oracle/regenerate.sh), vocab
// conversion, special tokens, detokenization and round trips.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/json.h"
#include "runtime/tokenizer/unicode.h"
#include "runtime/tokenizer/utf8_stream.h"
#include "tests/unit/tokenizer_fixture.h"
#include "tests/unit/slurp.h"

using namespace ckjit::tok;
using Ids = std::vector<int32_t>;

namespace {

struct CorpusEntry {
  std::string text;
  bool llama_failed = false;  // llama.cpp threw (a code point above U+10FFFF); compare with subst_*
  Ids plain, special;         // llama_tokenize(add_special=false, parse_special=false / true)
};

std::string unhex(const std::string& h) {
  std::string out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
  return out;
}

Ids ids_of(const ckjit::JsonValue& v) {
  Ids ids;
  for (const auto& x : v.as_array()) ids.push_back(static_cast<int32_t>(x.as_int()));
  return ids;
}

const std::vector<CorpusEntry>& corpus() {
  static const std::vector<CorpusEntry> entries = [] {
    std::vector<CorpusEntry> out;
    std::ifstream f(std::string(CKJIT_FIXTURES_DIR) + "/tokenizer/corpus.jsonl");
    REQUIRE(f);
    for (std::string line; std::getline(f, line);) {
      const auto j = ckjit::parse_json(line);
      CorpusEntry e;
      e.text = unhex(j.at("hex").as_string());
      e.llama_failed = j.at("plain").is_string();
      e.plain = ids_of(j.at(e.llama_failed ? "subst_plain" : "plain"));
      e.special = ids_of(j.at(e.llama_failed ? "subst_special" : "special"));
      out.push_back(std::move(e));
    }
    return out;
  }();
  return entries;
}

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) { out += d[c >> 4]; out += d[c & 15]; }
  return out;
}

// What llama.cpp's tokenizer sees of a text: the lenient decode re-encoded (invalid bytes -> EF BF BD).
std::string normalized(const std::string& s) {
  std::string out;
  for (uint32_t cp : decode_utf8_lenient(s)) append_utf8(out, cp);
  return out;
}

}  // namespace

TEST_SUITE("tokenizer") {

TEST_CASE("Qwen3 vocab converted like llama.cpp's converter / the other tests' GGUF copy of it is exact") {
  // From the HF files themselves; the other cases read the GGUF copy (tokenizer_fixture.h).
  const TokenizerVocab v = tokfix::qwen3_vocab_from_hf();
  const Tokenizer t(v);
  const TokenizerVocab& copy = tokfix::qwen3_vocab();
  CHECK(copy.model == v.model);
  CHECK(copy.pre == v.pre);
  CHECK(copy.tokens == v.tokens);
  CHECK(copy.token_types == v.token_types);
  CHECK(copy.merges == v.merges);
  CHECK(copy.bos_id == v.bos_id);
  CHECK(copy.eos_id == v.eos_id);
  CHECK(copy.add_bos == v.add_bos);
  CHECK(copy.add_eos == v.add_eos);
  CHECK(v.tokens.size() == 151936);
  CHECK(v.merges.size() == 151387);
  CHECK(v.merges[0] == "\xC4\xA0 \xC4\xA0");  // "Ġ Ġ"
  CHECK(t.bos_id() == 151643);
  CHECK(t.eos_id() == 151645);
  CHECK_FALSE(v.add_bos);
  CHECK(t.token_text(151644) == "<|im_start|>");
  CHECK(t.token_text(151669) == "[PAD151669]");
  CHECK(t.token_text(151935) == "[PAD151935]");
  CHECK(t.token_type(151669) == TokenType::Unused);
  CHECK(t.token_type(9707) == TokenType::Normal);
  for (int32_t id = 151643; id <= 151668; ++id) {
    const bool user_defined = id == 151657 || id == 151658 || (id >= 151665 && id <= 151668);
    CHECK_MESSAGE(t.token_type(id) == (user_defined ? TokenType::UserDefined : TokenType::Control), id);
  }
  // llama.cpp also promotes the ordinary token "</s>" (128247) to CONTROL + end-of-generation by its text
  CHECK(t.token_type(128247) == TokenType::Control);
  CHECK(t.eog_ids() == Ids{128247, 151643, 151645, 151662, 151663, 151664});
  CHECK(t.is_eog(151645));
  CHECK_FALSE(t.is_eog(151644));
  CHECK(t.find_token("\xC4\xA0the") >= 0);
  CHECK(t.find_token("no such token") == -1);
}

TEST_CASE("token ids identical to llama.cpp on the corpus") {
  const Tokenizer& t = tokfix::qwen3();
  const auto& entries = corpus();
  REQUIRE(entries.size() >= 5000);
  size_t agree_plain = 0, agree_special = 0, llama_failed = 0;
  for (const CorpusEntry& e : entries) {
    Ids plain, special;
    REQUIRE_NOTHROW(plain = t.encode(e.text, false, false));
    REQUIRE_NOTHROW(special = t.encode(e.text, false, true));
    agree_plain += plain == e.plain;
    agree_special += special == e.special;
    llama_failed += e.llama_failed;
    CHECK_MESSAGE(plain == e.plain, "parse_special=false, input hex ", hex(e.text));
    CHECK_MESSAGE(special == e.special, "parse_special=true, input hex ", hex(e.text));
  }
  MESSAGE("agreement with llama.cpp: parse_special=false ", agree_plain, "/", entries.size(),
          ", parse_special=true ", agree_special, "/", entries.size(), " (", llama_failed,
          " inputs where llama.cpp throws: compared with its ids for the U+FFFD-substituted text)");
}

TEST_CASE("detokenization round-trips valid UTF-8 and returns U+FFFD for invalid bytes") {
  const Tokenizer& t = tokfix::qwen3();
  size_t valid = 0;
  for (const CorpusEntry& e : corpus()) {
    const Ids plain = t.encode(e.text, false, false);
    const Ids special = t.encode(e.text, false, true);
    if (is_valid_utf8(e.text)) {
      ++valid;
      CHECK_MESSAGE(t.decode(plain, false) == e.text, hex(e.text));
      CHECK_MESSAGE(t.decode(special, true) == e.text, hex(e.text));
    } else {
      CHECK_MESSAGE(t.decode(plain, false) == normalized(e.text), hex(e.text));
    }
  }
  CHECK(valid > 4000);
}

TEST_CASE("detokenization of every id equals llama.cpp's token_to_piece") {
  // pieces.json: per block of ids, FNV-1a 64 over (u32 length, bytes) of each llama.cpp piece.
  const Tokenizer& t = tokfix::qwen3();
  const std::string text = test_io::slurp(std::string(CKJIT_FIXTURES_DIR) + "/tokenizer/pieces.json");
  REQUIRE(!text.empty());
  const auto j = ckjit::parse_json(text);
  REQUIRE(j.at("n_tokens").as_int() == t.n_tokens());
  const auto block = static_cast<int32_t>(j.at("block").as_int());
  for (bool special : {false, true}) {
    const auto& digests = j.at(special ? "special" : "plain").as_array();
    for (int32_t start = 0, b = 0; start < t.n_tokens(); start += block, ++b) {
      uint64_t h = 0xCBF29CE484222325ull;
      auto mix = [&](const void* p, size_t n) {
        for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(p)[i]) * 0x100000001B3ull;
      };
      for (int32_t id = start; id < t.n_tokens() && id < start + block; ++id) {
        const std::string piece = t.token_to_piece(id, special);
        const auto len = static_cast<uint32_t>(piece.size());
        mix(&len, 4);
        mix(piece.data(), piece.size());
      }
      char hexd[17];
      std::snprintf(hexd, sizeof hexd, "%llx", static_cast<unsigned long long>(h));
      CHECK_MESSAGE(digests.at(b).as_string() == hexd, "ids ", start, "..", start + block - 1, " special=", special);
    }
  }
}

TEST_CASE("special tokens: CONTROL only with parse_special and USER_DEFINED always") {
  const Tokenizer& t = tokfix::qwen3();
  const std::string prompt = "<|im_start|>user\nHi<think>x</think><|im_end|>";
  const Ids special = t.encode(prompt, false, true);
  REQUIRE(special.size() >= 6);
  CHECK(special.front() == 151644);
  CHECK(special.back() == 151645);
  const Ids plain = t.encode(prompt, false, false);
  CHECK(std::count(plain.begin(), plain.end(), 151667) == 1);  // <think> is USER_DEFINED
  CHECK(std::count(plain.begin(), plain.end(), 151668) == 1);
  CHECK(std::count(plain.begin(), plain.end(), 151644) == 0);
  CHECK(t.token_to_piece(151644, false) == "");
  CHECK(t.token_to_piece(151644, true) == "<|im_start|>");
  CHECK(t.token_to_piece(151667, false) == "<think>");
  CHECK(t.token_to_piece(151700, true) == "");  // UNUSED filler
  CHECK(t.decode(special, false) == "user\nHi<think>x</think>");
  CHECK(t.encode("", true, true).empty());  // add_bos is false for Qwen
  CHECK(t.token_to_piece(t.encode(" ", false, false).at(0)) == " ");
  // a token that is a partial UTF-8 sequence decodes to those raw bytes
  const Ids emoji = t.encode("\xF0\x9F\xA6\x99", false, false);
  std::string joined;
  for (int32_t id : emoji) joined += t.token_to_piece(id);
  CHECK(joined == "\xF0\x9F\xA6\x99");
}

TEST_CASE("random bytes never fail and decode to what llama.cpp's decoder sees") {
  const Tokenizer& t = tokfix::qwen3();
  const std::string pool[] = {"<|im_start|>", "<|im_end|>", "<think>", "</tool_call>", "\xF4\x90\x80\x80", "\xC0\x80",
                              "\xED\xA0\x80", "\xF0\x9F\x98", " ", "\n", "\r\n", "'s", "a", "\xE4\xB8\xAD", "7"};
  uint64_t s = 0x9E3779B97F4A7C15ull;
  auto next = [&] { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return s; };
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text;
    const int parts = 1 + int(next() % 12);
    for (int k = 0; k < parts; ++k) {
      if (next() % 3 == 0) text += pool[next() % std::size(pool)];
      else text.push_back(static_cast<char>(next() & 0xFF));
    }
    Ids plain, special;
    REQUIRE_NOTHROW(plain = t.encode(text, false, false));
    REQUIRE_NOTHROW(special = t.encode(text, false, true));
    CHECK_MESSAGE(t.decode(plain) == normalized(text), hex(text));
  }
}

TEST_CASE("streaming detokenization emits only whole characters") {
  const Tokenizer& t = tokfix::qwen3();
  size_t checked = 0;
  for (const CorpusEntry& e : corpus()) {
    if (!is_valid_utf8(e.text)) continue;
    Utf8Stream stream;
    std::string joined;
    for (int32_t id : t.encode(e.text, false, true)) {
      const std::string chunk = stream.push(t.token_to_piece(id, true));
      CHECK_MESSAGE(is_valid_utf8(chunk), hex(e.text));
      joined += chunk;
    }
    CHECK(stream.flush().empty());
    CHECK(joined == e.text);
    ++checked;
  }
  CHECK(checked > 4000);
}

TEST_CASE("long inputs") {
  const Tokenizer& t = tokfix::qwen3();
  std::string text;
  for (int i = 0; i < 2000; ++i) text += "The quick brown fox jumps over the lazy dog 12345. \xE4\xB8\xAD\xE6\x96\x87\n";
  const Ids ids = t.encode(text, false, true);
  CHECK(ids.size() > 20000);
  CHECK(t.decode(ids) == text);
  const std::string letters(200000, 'a');
  CHECK(t.decode(t.encode(letters)) == letters);
}

}  // TEST_SUITE
