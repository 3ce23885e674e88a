// Structured output: the JSON Schema subset compiled to a byte DFA, the token masks over the real
// Qwen3 vocabulary, and generation under a grammar on a tiny model.
#include <doctest/doctest.h>

#include <random>
#include <string>
#include <vector>

#include "graph/generate.h"
#include "graph/session.h"
#include "graph/text_model.h"
#include "json_schema_check.h"
#include "dfa_accepts.h"
#include "runtime/error.h"
#include "runtime/structured/json_schema.h"
#include "runtime/structured/token_constraint.h"
#include "tiny_qwen3vl.h"
#include "tokenizer_fixture.h"

using namespace ckjit;
using namespace ckjit::structured;

namespace {

bool accepts(const Dfa& d, const std::string& text) { return dfa_accepts(d, text); }

const char* kInvoice = R"({
  "title": "invoice",
  "type": "object",
  "properties": {
    "number": {"type": "string", "maxLength": 12},
    "total": {"type": "number"},
    "paid": {"type": "boolean"},
    "currency": {"enum": ["EUR", "USD", "CHF"]},
    "lines": {"type": "array", "maxItems": 3, "items": {"$ref": "#/$defs/line"}},
    "note": {"type": ["string", "null"], "maxLength": 8}
  },
  "required": ["number", "total", "currency", "lines"],
  "additionalProperties": false,
  "$defs": {"line": {"type": "object", "properties": {"qty": {"type": "integer"}, "item": {"type": "string", "minLength": 1, "maxLength": 6}},
                      "required": ["qty", "item"]}}
})";

// A random text the DFA accepts: random live bytes, stopping at an accepting state with chance 1/8.
std::string random_accepted(const Dfa& d, std::mt19937& rng) {
  std::string out;
  int32_t s = 0;
  for (int steps = 0; steps < 4000; ++steps) {
    if (d.accepting(s) && (!d.has_next(s) || rng() % 8 == 0)) return out;
    std::vector<int> live;
    for (int b = 0; b < 256; ++b)
      if (d.next(s, uint8_t(b)) != Dfa::kDead) live.push_back(b);
    // Prefer structure over long strings and whitespace so that texts end.
    int b = live[rng() % live.size()];
    for (int tries = 0; tries < 3 && (b == ' ' || b == '\n' || b == '\t' || (b > 0x20 && b < 0x7f && std::isalnum(b) && live.size() > 60)); ++tries)
      b = live[rng() % live.size()];
    out.push_back(char(b));
    s = d.next(s, uint8_t(b));
  }
  return out;
}

}  // namespace

TEST_CASE("json schema: objects with required and optional properties in order" * doctest::test_suite("structured")) {
  const Dfa d = compile_json_schema(R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"}},"required":["a"]})");
  CHECK(accepts(d, R"({"a":1})"));
  CHECK(accepts(d, R"({"a":-20,"b":"x"})"));
  CHECK(accepts(d, "{ \"a\" : 7 ,\n  \"b\": \"\" }"));
  CHECK_FALSE(accepts(d, R"({"b":"x"})"));         // a is required
  CHECK_FALSE(accepts(d, R"({"a":1,})"));          // trailing comma
  CHECK_FALSE(accepts(d, R"({"a":1.5})"));         // an integer
  CHECK_FALSE(accepts(d, R"({"a":01})"));          // leading zero
  CHECK_FALSE(accepts(d, R"({"b":"x","a":1})"));   // the schema's order
  CHECK_FALSE(accepts(d, R"({"a":1,"c":2})"));     // no extra keys are written
  CHECK_FALSE(accepts(d, R"({"a":1} )"));          // nothing after the value
  const Dfa opt = compile_json_schema(R"({"type":"object","properties":{"a":{"type":"null"},"b":{"type":"boolean"}}})");
  CHECK(accepts(opt, "{}"));
  CHECK(accepts(opt, R"({"b":false})"));
  CHECK(accepts(opt, R"({"a":null,"b":true})"));
  CHECK_FALSE(accepts(opt, R"({,"b":true})"));
}

TEST_CASE("json schema: strings count characters and accept only valid JSON strings" * doctest::test_suite("structured")) {
  const Dfa d = compile_json_schema(R"({"type":"string","minLength":1,"maxLength":3})");
  CHECK(accepts(d, R"("abc")"));
  CHECK(accepts(d, "\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\""));  // é € 😀: three characters
  CHECK(accepts(d, R"("\n\u00e9\"")"));
  CHECK_FALSE(accepts(d, R"("")"));
  CHECK_FALSE(accepts(d, R"("abcd")"));
  CHECK_FALSE(accepts(d, "\"a\nb\""));         // a raw control character
  CHECK_FALSE(accepts(d, "\"\xC3\""));         // a cut UTF-8 sequence
  CHECK_FALSE(accepts(d, "\"\xED\xA0\x80\"")); // an encoded surrogate
  CHECK_FALSE(accepts(d, R"("\x")"));          // an unknown escape
}

TEST_CASE("json schema: numbers / enum / const / anyOf / arrays and references" * doctest::test_suite("structured")) {
  const Dfa n = compile_json_schema(R"({"type":"number"})");
  for (const char* ok : {"0", "-0.5", "12e3", "1.25E-2", "9999999999999999"}) CHECK(accepts(n, ok));
  for (const char* bad : {"+1", ".5", "1.", "1e", "--1", "99999999999999999"}) CHECK_FALSE(accepts(n, bad));
  const Dfa e = compile_json_schema(R"({"enum":["apple","apricot",3,null,{"k":[1]}]})");
  for (const char* ok : {R"("apple")", R"("apricot")", "3", "null", R"({"k":[1]})"}) CHECK(accepts(e, ok));
  CHECK_FALSE(accepts(e, R"("ap")"));
  CHECK(accepts(compile_json_schema(R"({"const":"x"})"), R"("x")"));
  const Dfa a = compile_json_schema(R"({"anyOf":[{"type":"integer"},{"type":"array","items":{"type":"boolean"},"minItems":1,"maxItems":2}]})");
  CHECK(accepts(a, "5"));
  CHECK(accepts(a, "[true]"));
  CHECK(accepts(a, "[ true , false ]"));
  CHECK_FALSE(accepts(a, "[]"));
  CHECK_FALSE(accepts(a, "[true,false,true]"));
  const Dfa any = any_json_object();
  CHECK(accepts(any, R"({"a":[1,{"b":null}],"c":"d"})"));
  CHECK_FALSE(accepts(any, "[1]"));
  CHECK_FALSE(accepts(any, R"({"a":1)"));
}

TEST_CASE("json schema: what is outside the subset is an error naming the keyword and the place" * doctest::test_suite("structured")) {
  auto error_of = [](const char* schema) -> std::string {
    try {
      compile_json_schema(schema);
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::invalid_argument);
      return e.what();
    }
    return "";
  };
  CHECK(error_of(R"({"type":"string","pattern":"^a"})").find("'pattern'") != std::string::npos);
  CHECK(error_of(R"({"properties":{"x":{"type":"integer","minimum":0}}})").find("/properties/x") != std::string::npos);
  CHECK(error_of(R"({"$defs":{"n":{"type":"array","items":{"$ref":"#/$defs/n"}}},"$ref":"#/$defs/n"})").find("recursive") != std::string::npos);
  CHECK(error_of(R"({"type":"object","properties":{"a":{}},"required":["b"]})").find("'b' is not among") != std::string::npos);
  CHECK(error_of(R"({"type":"strin"})").find("unknown type") != std::string::npos);
  CHECK(error_of("{not json").find("not valid JSON") != std::string::npos);
  CHECK(error_of("false").find("admits no value") != std::string::npos);
  CHECK(error_of(R"({"$ref":"https://example.com/s.json"})").find("only local") != std::string::npos);
  CHECK(error_of(R"({"type":"array","items":{"type":"string","maxLength":4096},"maxItems":4096})").find("too large") != std::string::npos);
  CHECK(error_of(R"({"type":"string","anyOf":[{"maxLength":3}]})").find("'type' beside 'anyOf'") != std::string::npos);
  CHECK(error_of(R"({"$ref":"#/$defs/a","maxLength":3,"$defs":{"a":{}}})").find("beside '$ref'") != std::string::npos);
  CHECK(error_of(R"({"type":"integer","enum":[1.5,"x"]})").find("no value of 'enum'") != std::string::npos);
  std::string deep = "true";
  for (int i = 0; i < 100; ++i) deep = R"({"type":"array","items":)" + deep + "}";
  CHECK(error_of(deep.c_str()).find("nested deeper") != std::string::npos);
}

TEST_CASE("json schema: keywords imply their type / enum values keep the schema's type / and $ref unescapes ~0 and ~1" * doctest::test_suite("structured")) {
  const Dfa items = compile_json_schema(R"({"minItems":2})");
  CHECK_FALSE(accepts(items, "[]"));
  CHECK(accepts(items, "[1,\"a\"]"));
  CHECK_FALSE(accepts(items, "7"));
  const Dfa len = compile_json_schema(R"({"minLength":1})");
  CHECK_FALSE(accepts(len, R"("")"));
  CHECK(accepts(len, R"("a")"));
  const Dfa typed = compile_json_schema(R"({"type":["integer","null"],"enum":[1.5,2,null,"x"]})");
  CHECK(accepts(typed, "2"));
  CHECK(accepts(typed, "null"));
  CHECK_FALSE(accepts(typed, "1.5"));
  CHECK_FALSE(accepts(typed, R"("x")"));
  const Dfa ref = compile_json_schema(R"({"$ref":"#/$defs/a~0b~1c","$defs":{"a~b/c":{"const":1}}})");
  CHECK(accepts(ref, "1"));
}

TEST_CASE("json schema: random texts of the automaton parse and validate against the schema" * doctest::test_suite("structured")) {
  const std::vector<std::string> schemas{kInvoice, R"({"type":"object"})",
                                         R"({"type":"array","items":{"anyOf":[{"type":"number"},{"type":"string","maxLength":2}]},"maxItems":4})",
                                         R"({"type":"object","additionalProperties":{"type":"integer"}})"};
  std::mt19937 rng(7);
  for (const std::string& schema : schemas) {
    const Dfa d = compile_json_schema(schema);
    int checked = 0;
    for (int i = 0; i < 300; ++i) {
      const std::string text = random_accepted(d, rng);
      if (!accepts(d, text)) continue;  // ran out of steps
      ++checked;
      const std::string why = schemacheck::check(text, schema);
      CAPTURE(text);
      CHECK(why == "");
    }
    CHECK(checked > 200);
  }
}

TEST_CASE("token masks: the sorted walk allows exactly the tokens whose bytes keep the DFA alive" * doctest::test_suite("structured")) {
  const tok::Tokenizer tk(tokfix::qwen3_vocab());
  const auto vocab = std::make_shared<const TokenBytes>(tk, 151936);
  const auto dfa = std::make_shared<const Dfa>(compile_json_schema(kInvoice));
  Grammar g{dfa, vocab, "json_schema"};
  TokenConstraint c(g);
  // Walk a valid text token by token; at each state compare the mask with every token checked alone.
  const std::string text = R"({"number": "A-17", "total": 12.5, "currency": "EUR", "lines": [{"qty": 2, "item": "pen"}]})";
  const std::vector<int32_t> ids = tk.encode(text);
  int states = 0;
  for (size_t i = 0; i <= ids.size(); ++i) {
    const std::vector<uint64_t>& m = c.allowed();
    int64_t diff = 0, allowed = 0;
    for (int32_t id = 0; id < 151936; ++id) {
      const bool in_mask = m[size_t(id) / 64] >> (id % 64) & 1;
      diff += in_mask != c.allows(id);
      allowed += in_mask;
    }
    CHECK(diff == 0);
    CHECK(allowed > 0);
    ++states;
    if (i < ids.size()) {
      REQUIRE(c.allows(ids[i]));
      c.accept(ids[i]);
    }
  }
  CHECK(c.complete());
  CHECK(c.allows(tk.eog_ids().front()));
  CHECK_FALSE(c.allows(ids.front()));  // nothing follows the value but the end
  CHECK(states == int(ids.size()) + 1);
  CHECK_THROWS_AS(c.accept(ids.front()), Error);
}

// Slow under the sanitizers (a 151936-row output per token): suite "slow".
TEST_SUITE("slow") {
TEST_CASE("structured output: 100 sampled generations at temperature 1 parse and validate") {
  // What is under test is the sampler and the grammar, not the model. The tied output of 151,936
  // rows is most of a step's time: Q4_K there (the JIT's GEMV) instead of Q6_K (llama.cpp's vec_dot
  // order for one row).
  tinymodel::Spec spec;
  spec.vocab = &tokfix::qwen3_vocab();
  spec.n_vocab = 151936;
  spec.embd_type = TensorType::Q4_K;
  const gguf::GgufFile f = gguf::GgufFile::from_bytes(tinymodel::bytes(spec), "tiny.gguf");
  const tok::Tokenizer tk(tokfix::qwen3_vocab());
  Workers pool(1);  // one thread: ctest runs another case beside it
  const graph::TextModel m(f, graph::ModelOptions{}, pool);
  auto g = std::make_shared<Grammar>();
  g->dfa = std::make_shared<const Dfa>(compile_json_schema(kInvoice));
  g->vocab = std::make_shared<const TokenBytes>(tk, 151936);
  g->source = "json_schema";
  const std::vector<int32_t> prompt = tk.encode("Read the invoice as JSON:", true, true);
  int valid = 0, ended = 0;
  for (int i = 0; i < 100; ++i) {
    graph::SessionOptions so;
    so.n_ctx = 1024;
    graph::Session s(m, so, pool);
    graph::GenerateOptions o;
    o.n_predict = 900;
    o.sampler.temp = 1.0f;  // top_k 40, top_p 0.95, min_p 0.05 as llama.cpp
    o.sampler.seed = uint64_t(i);
    o.grammar = g;
    std::string text;
    graph::GenerateCallbacks cb;
    cb.on_text = [&](const std::string& t) { text += t; };
    const graph::GenerateResult r = graph::generate(s, tk, prompt, o, cb);
    ended += r.stop == graph::StopReason::end_of_generation;
    const std::string why = schemacheck::check(text, kInvoice);
    CAPTURE(text);
    CHECK(why == "");
    valid += why.empty();
  }
  CHECK(valid == 100);
  CHECK(ended == 100);
}
}  // TEST_SUITE
