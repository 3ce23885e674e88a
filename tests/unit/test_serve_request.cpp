// ckjit serve's pieces without a server: request parsing and validation (every 4xx it gives),
// the response / chunk / error shapes, stop strings split across tokens, the cache key's hash and
// the metrics text.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>

#include <sys/stat.h>
#include <unistd.h>

#include "tests/unit/serve_test_util.h"
#include "tools/serve/image_cache.h"
#include "tools/serve/metrics.h"
#include "tools/serve/openai_request.h"
#include "tools/serve/openai_response.h"

using namespace ckjit::serve;
using json = nlohmann::json;

namespace {

std::string image(const char* name) { return (std::filesystem::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / name).string(); }

// The HttpError a body gives (status 0: none).
HttpError error_of(const std::string& body, const RequestLimits& lim = {}) {
  try {
    parse_chat_request(body, lim);
  } catch (const HttpError& e) {
    return e;
  }
  return HttpError(0, "", "", "no error");
}

std::string with_image(const std::string& url) {
  return json{{"messages", {{{"role", "user"}, {"content", {{{"type", "text"}, {"text", "look"}}, {{"type", "image_url"}, {"image_url", {{"url", url}}}}}}}}}}.dump();
}

}  // namespace

TEST_SUITE("serve") {

TEST_CASE("serve request: string and part contents and sampling fields parse into the struct") {
  const std::string png = serve_png_uri(image("wide-200x48.png"));
  const json body = {{"model", "tiny"},
                     {"messages",
                      {{{"role", "system"}, {"content", "Be brief."}},
                       {{"role", "user"},
                        {"content",
                         {{{"type", "text"}, {"text", "A <__media__> "}}, {{"type", "image_url"}, {"image_url", {{"url", png}}}},
                          {{"type", "text"}, {"text", " and "}}, {{"type", "image_url"}, {"image_url", png}}}}},
                       {{"role", "assistant"}, {"content", "ok"}}}},
                     {"temperature", 0.5}, {"top_p", 0.9}, {"max_tokens", 7}, {"seed", 42}, {"stop", {"\n", "END"}}, {"stream", true},
                     {"stream_options", {{"include_usage", true}}}, {"ignore_eos", true}, {"top_k", 5}, {"min_p", 0.2},
                     {"presence_penalty", 0.5}, {"frequency_penalty", -0.25}, {"repeat_penalty", 1.1}, {"repeat_last_n", 32},
                     {"logit_bias", {{"12", -100}, {"7", 2.5}}}};
  const ChatRequest r = parse_chat_request(body.dump(), {});
  REQUIRE(r.model);
  CHECK(*r.model == "tiny");
  REQUIRE(r.messages.size() == 3);
  CHECK(r.messages[0].role == "system");
  CHECK(r.messages[0].content == "Be brief.");
  // The user's own marker text is removed; each image part leaves one marker.
  CHECK(r.messages[1].content == "A  <__media__> and <__media__>");
  REQUIRE(r.images.size() == 2);
  CHECK(r.images[0] == serve_file_bytes(image("wide-200x48.png")));
  REQUIRE(r.image_sizes.size() == 2);
  CHECK(r.image_sizes[0] == std::pair<int32_t, int32_t>(200, 48));
  CHECK(r.temperature == doctest::Approx(0.5));
  CHECK(r.top_p == doctest::Approx(0.9));
  CHECK(r.max_tokens == 7);
  REQUIRE(r.seed);
  CHECK(*r.seed == 42u);
  CHECK(r.stop == std::vector<std::string>{"\n", "END"});
  CHECK(r.stream);
  CHECK(r.include_usage);
  CHECK(r.ignore_eos);
  CHECK(r.top_k == 5);
  CHECK(r.min_p == doctest::Approx(0.2));
  CHECK(r.presence_penalty == doctest::Approx(0.5));
  CHECK(r.frequency_penalty == doctest::Approx(-0.25));
  CHECK(r.repeat_penalty == doctest::Approx(1.1));
  CHECK(r.repeat_last_n == 32);
  CHECK(r.logit_bias == std::vector<std::pair<int32_t, float>>{{12, -100.0f}, {7, 2.5f}});
  // llama-server's array form of logit_bias.
  CHECK(parse_chat_request(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":[[3,1.5]]})", {}).logit_bias ==
        std::vector<std::pair<int32_t, float>>{{3, 1.5f}});

  RequestLimits lim;
  lim.default_max_tokens = 33;
  const ChatRequest d = parse_chat_request(R"({"messages":[{"role":"user","content":"hi"}],"stop":"X"})", lim);
  CHECK_FALSE(d.model);
  CHECK(d.max_tokens == 33);
  CHECK(d.stop == std::vector<std::string>{"X"});
  CHECK_FALSE(d.stream);
  CHECK_FALSE(d.seed);
  // The defaults, visible (llama-server's).
  CHECK(d.temperature == doctest::Approx(0.8));
  CHECK(d.top_k == 40);
  CHECK(d.top_p == doctest::Approx(0.95));
  CHECK(d.min_p == doctest::Approx(0.05));
  CHECK(d.logit_bias.empty());
}

TEST_CASE("serve request: tools/serve/README.md's field table says of every field what the parser does") {
  std::ifstream in(std::string(CKJIT_SOURCE_DIR) + "/tools/serve/README.md");
  REQUIRE(in);
  std::map<std::string, std::string> table;  // field -> honoured / refused
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| `", 0) != 0) continue;
    const size_t end = line.find('`', 3);
    const size_t bar = line.find('|', end);
    const size_t bar2 = line.find('|', bar + 1);
    if (end == std::string::npos || bar2 == std::string::npos) continue;
    std::string what = line.substr(bar + 1, bar2 - bar - 1);
    std::erase(what, ' ');
    if (what == "honoured" || what == "refused") table[line.substr(3, end - 3)] = what;
  }
  size_t n = 0;
  for (const FieldRule& f : chat_request_fields()) {
    CAPTURE(f.name);
    REQUIRE(table.count(f.name) == 1);
    CHECK(table[f.name] == (f.refused ? "refused" : "honoured"));
    ++n;
  }
  CHECK(table.size() == n);  // and no row for a field the parser does not know
}

TEST_CASE("serve request: malformed bodies and bad fields are 400 with a code") {
  CHECK(error_of("{not json").status == 400);
  CHECK(error_of("{not json").code == "invalid_json");
  CHECK(error_of("").code == "invalid_json");
  CHECK(error_of("[1,2]").status == 400);
  CHECK(error_of(R"({"messages":[]})").status == 400);
  CHECK(error_of(R"({"messages":"hi"})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"wizard","content":"x"}]})").status == 400);
  CHECK(error_of(R"({"messages":[{"content":"x"}]})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":5}]})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":[{"type":"audio"}]}]})").status == 400);
  CHECK(error_of(R"({"model":3,"messages":[{"role":"user","content":"x"}]})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"temperature":9})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"temperature":"hot"})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"top_p":1.5})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":0})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":2.5})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"stop":[1]})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"stream":"yes"})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"seed":"s"})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"top_k":-1})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"min_p":1})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"presence_penalty":3})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":{"a":1}})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"logit_bias":[[1]]})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"stream_options":{"include_usage":true}})").status == 400);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"stream":true,"stream_options":{"extra":1}})").code == "unsupported_parameter");
  // Every documented field is either honoured or refused by name; anything else is unknown.
  for (const FieldRule& f : chat_request_fields()) {
    const std::string b = std::string(R"({"messages":[{"role":"user","content":"x"}],")") + f.name + R"(":{"x":1}})";
    const HttpError e = error_of(b);
    if (f.refused) CHECK_MESSAGE(e.code == "unsupported_parameter", f.name);
    else if (std::string(f.name) != "stream_options") CHECK_MESSAGE(e.code != "unsupported_parameter", f.name);  // (its "x" is)
    CHECK_MESSAGE(e.code != "unknown_parameter", f.name);
  }
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"temprature":1})").code == "unknown_parameter");
  RequestLimits lim;
  lim.max_tokens_limit = 100;
  const HttpError over = error_of(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":101})", lim);
  CHECK(over.status == 400);
  CHECK(over.code == "max_tokens_too_large");
  CHECK(std::string(over.what()).find("100") != std::string::npos);
  CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"max_tokens":100})", lim).status == 0);
}

TEST_CASE("serve request: image URLs that are not images or over the pixel limit or local without the flag are refused") {
  const HttpError text_uri = error_of(with_image("data:text/plain;base64," + serve_base64("hello")));
  CHECK(text_uri.status == 400);
  CHECK(text_uri.code == "invalid_image");
  // An image media type over bytes that are not an image: the header check refuses it.
  const HttpError fake = error_of(with_image("data:image/png;base64," + serve_base64("not a png at all")));
  CHECK(fake.status == 400);
  CHECK(fake.code == "invalid_image");
  CHECK(error_of(with_image("data:image/png;base64,@@@@")).code == "invalid_image");
  CHECK(error_of(with_image("data:image/png;base64,QQ=A")).code == "invalid_image");
  CHECK(error_of(with_image("data:image/png,rawbytes")).code == "invalid_image");
  CHECK(error_of(with_image("data:image/png;base64")).code == "invalid_image");
  CHECK(error_of(with_image("https://example.com/a.png")).status == 400);
  RequestLimits lim;
  lim.max_image_pixels = 640 * 480 - 1;
  const HttpError big = error_of(with_image(serve_png_uri(image("big-640x480.jpg"))), lim);
  CHECK(big.status == 400);
  CHECK(big.code == "image_too_large");
  CHECK(std::string(big.what()).find("640 x 480") != std::string::npos);
  lim.max_image_pixels = 640 * 480;
  CHECK(error_of(with_image(serve_png_uri(image("big-640x480.jpg"))), lim).status == 0);
  const HttpError local = error_of(with_image("file://" + image("square-64.png")));
  CHECK(local.status == 403);
  CHECK(local.code == "local_images_disabled");
  CHECK(error_of(with_image(image("square-64.png"))).status == 403);
  lim.local_image_root = canonical_image_root(std::filesystem::path(image("square-64.png")).parent_path().string());
  const ChatRequest ok = parse_chat_request(with_image("file://" + image("square-64.png")), lim);
  REQUIRE(ok.images.size() == 1);
  CHECK(ok.images[0] == serve_file_bytes(image("square-64.png")));
  CHECK(error_of(with_image("file:///nonexistent/x.png"), lim).status == 403);
  lim.max_images = 0;
  CHECK(error_of(with_image(serve_png_uri(image("square-64.png"))), lim).code == "too_many_images");
}

TEST_CASE("serve request: --allow-local-images DIR reads only regular files under DIR and no links out or FIFOs or files over the size limit") {
  namespace fs = std::filesystem;
  const fs::path base = fs::temp_directory_path() / ("ckjit-local-images-" + std::to_string(::getpid()));
  fs::remove_all(base);
  fs::create_directories(base / "root" / "sub");
  fs::create_directories(base / "outside");
  const std::string png = serve_file_bytes(image("square-64.png"));
  for (const fs::path& p : {base / "root" / "sub" / "a.png", base / "outside" / "secret.png"}) std::ofstream(p, std::ios::binary) << png;
  fs::create_symlink(base / "outside" / "secret.png", base / "root" / "link-out.png");
  fs::create_symlink(base / "root" / "sub" / "a.png", base / "root" / "link-in.png");
  fs::create_directory_symlink(base / "outside", base / "root" / "dir-out");
  REQUIRE(::mkfifo((base / "root" / "fifo.png").c_str(), 0600) == 0);
  std::ofstream(base / "root" / "big.png", std::ios::binary) << png << std::string(4096, '\0');

  RequestLimits lim;
  lim.local_image_root = canonical_image_root((base / "root").string());
  lim.max_local_image_bytes = png.size() + 100;
  const auto read = [&](const fs::path& p) { return parse_chat_request(with_image("file://" + p.string()), lim).images.at(0); };
  CHECK(read(base / "root" / "sub" / "a.png") == png);
  CHECK(read(base / "root" / "link-in.png") == png);               // a link that stays inside
  CHECK(read(base / "root" / "sub" / ".." / "sub" / "a.png") == png);  // '..' that stays inside
  for (const fs::path& p : {base / "outside" / "secret.png", base / "root" / "link-out.png", base / "root" / "dir-out" / "secret.png",
                            base / "root" / ".." / "outside" / "secret.png", fs::path("/etc/passwd"), fs::path("/proc/self/environ"),
                            base / "root" / "fifo.png", base / "root" / "sub", base / "root" / "missing.png", base / "root"}) {
    const HttpError e = error_of(with_image("file://" + p.string()), lim);
    INFO(p.string() << ": " << e.what());
    CHECK(e.status == 403);
    CHECK(e.code == "local_image_refused");
  }
  // The same answer for a file outside the folder and one that does not exist: nothing is probed.
  CHECK(std::string(error_of(with_image("/etc/passwd"), lim).what()).find("under the server's image folder") != std::string::npos);
  const HttpError big = error_of(with_image((base / "root" / "big.png").string()), lim);
  CHECK(big.status == 400);
  CHECK(big.code == "image_too_large");
  CHECK_THROWS_WITH_AS(canonical_image_root((base / "root" / "sub" / "a.png").string()), doctest::Contains("is not a folder"), std::runtime_error);
  fs::remove_all(base);
}

TEST_CASE("serve request: base64 decodes RFC 4648 vectors and the URL-safe alphabet") {
  CHECK(decode_base64("TWFu") == "Man");
  CHECK(decode_base64("TWE=") == "Ma");
  CHECK(decode_base64("TQ==") == "M");
  CHECK(decode_base64("Zm9v\nYmFy") == "foobar");
  CHECK(decode_base64("-_8=") == std::string("\xfb\xff", 2));
  const std::string all = [] {
    std::string s;
    for (int i = 0; i < 256; ++i) s += char(i);
    return s;
  }();
  CHECK(decode_base64(serve_base64(all)) == all);
  CHECK_THROWS_AS(decode_base64("T"), HttpError);
  CHECK_THROWS_AS(decode_base64("TQ==TQ"), HttpError);
}

TEST_CASE("serve response: completion and chunk and models and error objects have the OpenAI fields") {
  const CompletionId id = new_completion_id("tiny");
  CHECK(id.id.rfind("chatcmpl-", 0) == 0);
  CHECK(new_completion_id("tiny").id != id.id);
  CHECK(id.created > 1700000000);
  const json c = completion_json(id, {{0, "hello", "length", std::nullopt}}, {5, 3});
  CHECK(c["id"] == id.id);
  CHECK(c["object"] == "chat.completion");
  CHECK(c["created"] == id.created);
  CHECK(c["model"] == "tiny");
  REQUIRE(c["choices"].size() == 1);
  CHECK(c["choices"][0]["index"] == 0);
  CHECK(c["choices"][0]["message"]["role"] == "assistant");
  CHECK(c["choices"][0]["message"]["content"] == "hello");
  CHECK(c["choices"][0]["finish_reason"] == "length");
  CHECK(c["choices"][0]["logprobs"].is_null());  // not asked for
  CHECK(c["usage"]["prompt_tokens"] == 5);
  CHECK(c["usage"]["completion_tokens"] == 3);
  CHECK(c["usage"]["total_tokens"] == 8);

  const json first = chunk_json(id, {0, std::string(), true, std::nullopt, nullptr});
  CHECK(first["object"] == "chat.completion.chunk");
  CHECK(first["choices"][0]["delta"]["role"] == "assistant");
  CHECK(first["choices"][0]["finish_reason"].is_null());
  CHECK_FALSE(first.contains("usage"));
  const json last = chunk_json(id, {0, std::nullopt, false, std::string("stop"), nullptr}, Usage{2, 1});
  CHECK(last["choices"][0]["delta"].is_object());
  CHECK(last["choices"][0]["delta"].empty());
  CHECK(last["choices"][0]["finish_reason"] == "stop");
  CHECK(last["usage"]["total_tokens"] == 3);
  const std::string ev = sse(last);
  CHECK(ev.rfind("data: {", 0) == 0);
  CHECK(ev.substr(ev.size() - 2) == "\n\n");
  CHECK(json::parse(ev.substr(6)) == last);
  CHECK(sse_done() == "data: [DONE]\n\n");

  const json m = models_json("tiny", 123);
  CHECK(m["object"] == "list");
  CHECK(m["data"][0]["id"] == "tiny");
  CHECK(m["data"][0]["object"] == "model");
  const json e = error_json("nope", error_type_for(404), "model_not_found");
  CHECK(e["error"]["message"] == "nope");
  CHECK(e["error"]["type"] == "not_found_error");
  CHECK(e["error"]["code"] == "model_not_found");
  CHECK(error_type_for(400) == "invalid_request_error");
  CHECK(error_type_for(503) == "server_error");
}

TEST_CASE("serve response: stop strings split across pieces are held back and never sent") {
  StopMatcher m({"END", "\n\n"});
  CHECK(m.push("hello E") == "hello ");  // "E" may start END
  CHECK(m.push("N") == "");
  CHECK(m.push("X") == "ENX");           // it did not
  CHECK(m.push(" a\n") == " a");
  CHECK(m.push("\nrest") == "");        // "\n\n": a hit, nothing from it on
  CHECK(m.hit());
  CHECK(m.push("more") == "");
  CHECK(m.flush() == "");
  StopMatcher tail({"STOP"});
  CHECK(tail.push("abcST") == "abc");
  CHECK_FALSE(tail.hit());
  CHECK(tail.flush() == "ST");  // the end of a generation without a hit: the held text goes out
  StopMatcher none({});
  CHECK(none.push("anything") == "anything");
  StopMatcher in_one({"cd"});
  CHECK(in_one.push("abcdef") == "ab");
  CHECK(in_one.hit());
}

TEST_CASE("serve cache: SHA-256 of known vectors and keys that differ by preprocessing settings") {
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(image_key("x", 8, 4096) != image_key("x", 8, 1024));
  CHECK(image_key("x", 8, 4096) != image_key("y", 8, 4096));
  CHECK(image_key("x", 8, 4096) == image_key("x", 8, 4096));
  ImageCache cache(1 << 20);
  CHECK(cache.get("k") == nullptr);
  CHECK(cache.stats().misses == 1);
  CHECK(cache.stats().hits == 0);
}

TEST_CASE("serve metrics: the Prometheus text has every family and the counts") {
  Metrics m;
  m.request("/v1/chat/completions", 200);
  m.request("/v1/chat/completions", 200);
  m.request("/v1/chat/completions", 400);
  m.request("/some/odd/path", 404);
  for (int i = 0; i < 1000; ++i) m.request("/junk/" + std::to_string(i), 404);  // grouped as they come
  CHECK(m.series() == 3);
  m.tokens(10, 4);
  m.phases(0.5, 0.25, 0.125);
  Metrics::Gauges g;
  g.queue_depth = 3, g.busy_sessions = 1, g.sessions = 2;
  g.cache.hits = 5, g.cache.misses = 6, g.cache.bytes = 1234;
  const std::string t = m.render(g);
  CHECK(t.find("ckjit_requests_total{path=\"/v1/chat/completions\",status=\"200\"} 2\n") != std::string::npos);
  CHECK(t.find("ckjit_requests_total{path=\"/v1/chat/completions\",status=\"400\"} 1\n") != std::string::npos);
  CHECK(t.find("ckjit_requests_total{path=\"other\",status=\"404\"} 1001\n") != std::string::npos);
  CHECK(t.find("ckjit_prompt_tokens_total 10\n") != std::string::npos);
  CHECK(t.find("ckjit_completion_tokens_total 4\n") != std::string::npos);
  CHECK(t.find("ckjit_phase_seconds_total{phase=\"encode\"} 0.5\n") != std::string::npos);
  CHECK(t.find("ckjit_phase_seconds_total{phase=\"decode\"} 0.125\n") != std::string::npos);
  CHECK(t.find("ckjit_queue_depth 3\n") != std::string::npos);
  CHECK(t.find("ckjit_sessions_busy 1\n") != std::string::npos);
  CHECK(t.find("ckjit_image_cache_hits_total 5\n") != std::string::npos);
  CHECK(t.find("ckjit_image_cache_misses_total 6\n") != std::string::npos);
  CHECK(t.find("ckjit_image_cache_bytes 1234\n") != std::string::npos);
  CHECK(t.find("# TYPE ckjit_requests_total counter") != std::string::npos);
}

}  // TEST_SUITE
