// `ckjit serve` end to end: a real server process on 127.0.0.1 and a real HTTP client. Random
// weights: the tests check shapes, counts, status codes and determinism (same seed, same text),
// never what the text says. Every server is stopped with SIGTERM and must exit 0.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <cmath>
#include <future>

#include "tests/unit/serve_process.h"
#include "tests/unit/serve_error_check.h"
#include "tests/unit/serve_test_util.h"

using json = nlohmann::json;
using serve_test::Server;

namespace {

std::string image(const char* name) { return (std::filesystem::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / name).string(); }

json text_body(const std::string& text, int max_tokens = 4, uint64_t seed = 1) {
  return {{"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", max_tokens}, {"seed", seed}, {"temperature", 0.7}};
}

json image_body(const std::string& path, int max_tokens = 3) {
  return {{"messages",
           {{{"role", "user"},
             {"content", {{{"type", "image_url"}, {"image_url", {{"url", serve_png_uri(path)}}}}, {{"type", "text"}, {"text", "Describe"}}}}}}},
          {"max_tokens", max_tokens}, {"seed", 5}};
}

httplib::Result post(const Server& s, const json& body, int timeout_s = 60) {
  return s.client(timeout_s)->Post("/v1/chat/completions", body.dump(), "application/json");
}

// The value of an unlabelled Prometheus sample ("name value").
double metric(const Server& s, const std::string& name) {
  auto r = s.client()->Get("/metrics");
  if (!r || r->status != 200) return -1;
  const size_t at = r->body.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stod(r->body.substr(at + name.size() + 2));
}

// The /metrics text once it holds `line` (a request's count is updated just after its answer is
// sent, so the next scrape may come first); what was last read otherwise.
std::string metrics_with(const Server& s, const std::string& line) {
  std::string body;
  for (int i = 0; i < 100; ++i) {
    auto r = s.client()->Get("/metrics");
    body = r ? r->body : "";
    if (body.find(line) != std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return body;
}

// The data: payloads of an SSE body, in order.
std::vector<std::string> sse_events(const std::string& body) {
  std::vector<std::string> out;
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  return out;
}

void check_completion_shape(const json& j, const std::string& model, int max_tokens) {
  CHECK(j["id"].get<std::string>().rfind("chatcmpl-", 0) == 0);
  CHECK(j["object"] == "chat.completion");
  CHECK(j["created"].is_number_integer());
  CHECK(j["model"] == model);
  REQUIRE(j["choices"].is_array());
  REQUIRE(j["choices"].size() == 1);
  const json& c = j["choices"][0];
  CHECK(c["index"] == 0);
  CHECK(c["message"]["role"] == "assistant");
  CHECK(c["message"]["content"].is_string());
  const std::string fr = c["finish_reason"].get<std::string>();
  CHECK((fr == "stop" || fr == "length"));
  const json& u = j["usage"];
  CHECK(u["prompt_tokens"].get<int>() > 0);
  CHECK(u["completion_tokens"].get<int>() >= 1);
  CHECK(u["completion_tokens"].get<int>() <= max_tokens);
  CHECK(u["total_tokens"].get<int>() == u["prompt_tokens"].get<int>() + u["completion_tokens"].get<int>());
  if (fr == "length") CHECK(u["completion_tokens"].get<int>() == max_tokens);
}

// A request sent on a raw socket that is left open (the caller closes it: a client that goes away
// without reading); -1 if it cannot connect.
int send_and_hold(int port, const std::string& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
  if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) != ssize_t(req.size())) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Waits (bounded) until the unlabelled metric has the value.
bool wait_metric(const Server& s, const std::string& name, double value) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30 * serve_test::slow_factor());
  while (std::chrono::steady_clock::now() < end) {
    if (metric(s, name) == value) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

// Sends a streaming request on a raw socket, reads until the first content piece, then closes the
// socket (a client that goes away mid-stream). Returns what was read.
std::string stream_then_drop(int port, const std::string& body) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(uint16_t(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::string got;
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0) {
    const std::string req = "POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == ssize_t(req.size())) {
      timeval tv{10 * serve_test::slow_factor(), 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      char buf[4096];
      // The first chunk's content is "" (it carries the role): wait for a second "content".
      auto pieces = [&] {
        size_t n = 0;
        for (size_t at = got.find("\"content\":\""); at != std::string::npos; at = got.find("\"content\":\"", at + 1)) ++n;
        return n;
      };
      while (pieces() < 2) {
        const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        got.append(buf, size_t(n));
        if (got.size() > (1 << 20)) break;
      }
    }
  }
  ::close(fd);
  return got;
}

}  // namespace

TEST_SUITE("serve") {

TEST_CASE("serve e2e: text and image completions with the OpenAI shape and the image cache hit on the second request") {
  Server s({"--alias", "tiny-test"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  auto health = s.client()->Get("/health");
  REQUIRE(health);
  CHECK(json::parse(health->body) == json{{"status", "ok"}});
  auto models = s.client()->Get("/v1/models");
  REQUIRE(models);
  CHECK(json::parse(models->body)["data"][0]["id"] == "tiny-test");
  // The context, vocabulary and modalities as llama-server's "meta" (this server has the mmproj).
  const json meta = json::parse(models->body)["data"][0]["meta"];
  CHECK(meta["n_ctx"].get<int>() > 0);
  CHECK(meta["n_vocab"].get<int>() > 1000);
  CHECK(meta["modalities"] == json::array({"text", "image"}));

  auto r = post(s, text_body("Hello there", 4));
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  CHECK(r->get_header_value("Content-Type").rfind("application/json", 0) == 0);
  const json a = json::parse(r->body);
  check_completion_shape(a, "tiny-test", 4);
  // Same seed, same text; the model may be named by alias or omitted.
  json named = text_body("Hello there", 4);
  named["model"] = "tiny-test";
  auto again = post(s, named);
  REQUIRE(again);
  REQUIRE(again->status == 200);
  CHECK(json::parse(again->body)["choices"][0]["message"]["content"] == a["choices"][0]["message"]["content"]);
  CHECK(json::parse(again->body)["id"] != a["id"]);

  // Greedy with ignore_eos: exactly max_tokens tokens and finish "length".
  json longer = text_body("Count", 6);
  longer["temperature"] = 0;
  longer["ignore_eos"] = true;
  auto l = post(s, longer);
  REQUIRE(l);
  const json lj = json::parse(l->body);
  CHECK(lj["choices"][0]["finish_reason"] == "length");
  CHECK(lj["usage"]["completion_tokens"] == 6);

  CHECK(metric(s, "ckjit_image_cache_misses_total") == 0);
  auto i1 = post(s, image_body(image("square-64.png")));
  REQUIRE(i1);
  INFO(i1->body);
  REQUIRE(i1->status == 200);
  const json ij = json::parse(i1->body);
  check_completion_shape(ij, "tiny-test", 3);
  // The image's 9 rows are in the prompt: more prompt tokens than the text alone gives.
  CHECK(ij["usage"]["prompt_tokens"].get<int>() > 9);
  CHECK(metric(s, "ckjit_image_cache_misses_total") == 1);
  CHECK(metric(s, "ckjit_image_cache_hits_total") == 0);
  CHECK(metric(s, "ckjit_image_cache_bytes") == 9 * 256 * 4 * 4);
  auto i2 = post(s, image_body(image("square-64.png")));
  REQUIRE(i2);
  REQUIRE(i2->status == 200);
  CHECK(metric(s, "ckjit_image_cache_hits_total") == 1);
  CHECK(metric(s, "ckjit_image_cache_misses_total") == 1);
  // The cached rows give the same answer as the encoded ones; the same request again reuses the
  // session's KV rows (cache_prompt, on by default) of all but the last rows of its prompt.
  const json u1 = ij["usage"], u2 = json::parse(i2->body)["usage"];
  CHECK(json::parse(i2->body)["choices"][0]["message"] == ij["choices"][0]["message"]);
  CHECK(u2["prompt_tokens"] == u1["prompt_tokens"]);
  CHECK(u2["completion_tokens"] == u1["completion_tokens"]);
  CHECK(u2["prompt_tokens_details"]["cached_tokens"].get<int>() >= 9);  // the image's 9 rows at least
  CHECK(u2["prompt_tokens_details"]["cached_tokens"].get<int>() < u2["prompt_tokens"].get<int>());
  // Without it, nothing is reused and the answer is the same.
  json nocache = image_body(image("square-64.png"));
  nocache["cache_prompt"] = false;
  auto i3 = post(s, nocache);
  REQUIRE(i3);
  REQUIRE(i3->status == 200);
  CHECK(json::parse(i3->body)["choices"][0]["message"] == ij["choices"][0]["message"]);
  CHECK(json::parse(i3->body)["usage"]["prompt_tokens_details"]["cached_tokens"] == 0);

  const std::string six = "ckjit_requests_total{path=\"/v1/chat/completions\",status=\"200\"} 6\n";
  CHECK(metrics_with(s, six).find(six) != std::string::npos);
  CHECK(metric(s, "ckjit_completion_tokens_total") >= 5);
  CHECK(metric(s, "ckjit_queue_depth") == 0);
  CHECK(metric(s, "ckjit_sessions_busy") == 0);
  CHECK(metrics_with(s, six).find("ckjit_phase_seconds_total{phase=\"encode\"}") != std::string::npos);
  CHECK(s.process().stop() == 0);
  CHECK(s.log().find("stopped") != std::string::npos);
}

TEST_CASE("serve e2e: streaming gives a role chunk then content chunks then the finish and the usage chunk when asked then DONE and stop strings cut the text") {
  Server s({"--image-cache-mb", "0.05"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  json body = text_body("Stream me", 5, 9);
  auto plain = post(s, body);
  REQUIRE(plain);
  REQUIRE(plain->status == 200);
  const json pj = json::parse(plain->body);
  body["stream"] = true;
  // Without stream_options.include_usage no chunk carries usage (OpenAI's rule).
  auto quiet = post(s, body);
  REQUIRE(quiet);
  REQUIRE(quiet->status == 200);
  for (const std::string& e : sse_events(quiet->body))
    if (e != "[DONE]") CHECK_FALSE(json::parse(e).contains("usage"));
  body["stream_options"] = {{"include_usage", true}};
  auto r = post(s, body);
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  CHECK(r->get_header_value("Content-Type").rfind("text/event-stream", 0) == 0);
  const std::vector<std::string> ev = sse_events(r->body);
  REQUIRE(ev.size() >= 4);
  CHECK(ev.back() == "[DONE]");
  std::string text, id;
  for (size_t i = 0; i + 2 < ev.size(); ++i) {
    const json c = json::parse(ev[i]);
    CHECK(c["object"] == "chat.completion.chunk");
    CHECK(c["choices"][0]["index"] == 0);
    CHECK_FALSE(c.contains("usage"));
    if (i == 0) {
      id = c["id"];
      CHECK(c["choices"][0]["delta"]["role"] == "assistant");
    }
    CHECK(c["id"] == id);
    if (c["choices"][0]["delta"].contains("content")) text += c["choices"][0]["delta"]["content"].get<std::string>();
    if (i + 3 < ev.size()) CHECK(c["choices"][0]["finish_reason"].is_null());
  }
  const json last = json::parse(ev[ev.size() - 3]);
  CHECK(last["choices"][0]["finish_reason"] == pj["choices"][0]["finish_reason"]);
  // The usage-only chunk: empty choices, the non-streamed answer's counts.
  const json usage = json::parse(ev[ev.size() - 2]);
  CHECK(usage["id"] == id);
  CHECK(usage["choices"].empty());
  CHECK(usage["usage"]["prompt_tokens"] == pj["usage"]["prompt_tokens"]);
  CHECK(usage["usage"]["completion_tokens"] == pj["usage"]["completion_tokens"]);
  // The streamed pieces join into the non-streamed text (same seed).
  CHECK(text == pj["choices"][0]["message"]["content"]);

  // A stop string taken from the text itself (the second piece: whole characters): the answer is
  // the text before its first occurrence, without it, finish "stop"; streamed the same.
  json longer = text_body("Stop me", 12, 21);
  longer["ignore_eos"] = true;
  longer["stream"] = true;
  auto full = post(s, longer);
  REQUIRE(full);
  std::vector<std::string> pieces;
  for (const std::string& e : sse_events(full->body))
    if (e != "[DONE]" && json::parse(e)["choices"][0]["delta"].contains("content")) pieces.push_back(json::parse(e)["choices"][0]["delta"]["content"]);
  std::string whole;
  for (const auto& p : pieces) whole += p;
  REQUIRE(pieces.size() >= 3);  // the role chunk's "" and at least two pieces
  const std::string stop = pieces[2].empty() ? pieces[1] : pieces[2];
  REQUIRE_FALSE(stop.empty());
  const std::string expect = whole.substr(0, whole.find(stop));
  longer["stop"] = json::array({stop, "\x01never"});
  longer["stream"] = false;
  auto stopped = post(s, longer);
  REQUIRE(stopped);
  const json sj = json::parse(stopped->body);
  CHECK(sj["choices"][0]["message"]["content"] == expect);
  CHECK(sj["choices"][0]["finish_reason"] == "stop");
  CHECK(sj["usage"]["completion_tokens"].get<int>() < 12);
  longer["stream"] = true;
  auto stopped_stream = post(s, longer);
  REQUIRE(stopped_stream);
  std::string streamed;
  std::string finish;
  for (const std::string& e : sse_events(stopped_stream->body)) {
    if (e == "[DONE]") continue;
    const json c = json::parse(e);
    if (c["choices"][0]["delta"].contains("content")) streamed += c["choices"][0]["delta"]["content"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
  }
  CHECK(streamed == expect);
  CHECK(finish == "stop");

  // The image cache holds one image's rows (36 KiB) in its 0.05 MiB: a second image evicts the first.
  auto a1 = post(s, image_body(image("square-64.png")));
  auto b1 = post(s, image_body(image("grey-96x80.png")));
  auto a2 = post(s, image_body(image("square-64.png")));
  REQUIRE(a1);
  REQUIRE(b1);
  REQUIRE(a2);
  CHECK(a2->status == 200);
  CHECK(metric(s, "ckjit_image_cache_misses_total") == 3);
  CHECK(metric(s, "ckjit_image_cache_hits_total") == 0);
  CHECK(metric(s, "ckjit_image_cache_evictions_total") == 2);
  CHECK(metric(s, "ckjit_image_cache_entries") == 1);
  CHECK(metric(s, "ckjit_image_cache_bytes") <= 0.05 * 1024 * 1024);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve e2e: /v1/completions answers a raw prompt as a text_completion and streams the same text") {
  Server s({});
  REQUIRE_MESSAGE(s.ok(), s.log());
  auto post_text = [&](const json& b) { return s.client(60)->Post("/v1/completions", b.dump(), "application/json"); };
  const json body = {{"prompt", "The invoice total is"}, {"max_tokens", 6}, {"seed", 3}, {"temperature", 0}, {"ignore_eos", true}};
  auto r = post_text(body);
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  const json j = json::parse(r->body);
  CHECK(j["object"] == "text_completion");
  CHECK(j["id"].get<std::string>().rfind("cmpl-", 0) == 0);
  const std::string text = j["choices"][0]["text"].get<std::string>();
  CHECK(j["choices"][0]["finish_reason"] == "length");
  CHECK(j["usage"]["completion_tokens"] == 6);
  // The prompt as given, no chat template: its own token count.
  auto tok = s.client(60)->Post("/tokenize", json{{"content", "The invoice total is"}}.dump(), "application/json");
  REQUIRE(tok);
  CHECK(j["usage"]["prompt_tokens"] == json::parse(tok->body)["tokens"].size());
  json streamed_body = body;
  streamed_body["stream"] = true;
  auto st = post_text(streamed_body);
  REQUIRE(st);
  std::string streamed;
  for (const std::string& e : sse_events(st->body)) {
    if (e == "[DONE]") continue;
    const json c = json::parse(e);
    CHECK(c["object"] == "text_completion");
    if (!c["choices"].empty()) streamed += c["choices"][0]["text"].get<std::string>();
  }
  CHECK(streamed == text);
  // Refused and malformed: named.
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{{"echo", true}, {"suffix", "x"}, {"best_of", 2}}) {
    json b = body;
    b[key] = value;
    check_serve_error(post_text(b), 400, "unsupported_parameter");
  }
  // Legacy logprobs (a count): parallel arrays, the offsets where each token's text starts.
  json lp = body;
  lp["logprobs"] = 2;
  auto rl = post_text(lp);
  REQUIRE(rl);
  REQUIRE(rl->status == 200);
  const json l = json::parse(rl->body)["choices"][0];
  CHECK(l["text"] == text);
  const json& tl = l["logprobs"];
  REQUIRE(tl["tokens"].size() == 6);
  REQUIRE(tl["token_logprobs"].size() == 6);
  REQUIRE(tl["top_logprobs"].size() == 6);
  std::string joined;
  for (size_t i = 0; i < 6; ++i) {
    CHECK(tl["text_offset"][i] == joined.size());
    joined += tl["tokens"][i].get<std::string>();
    CHECK(tl["top_logprobs"][i].size() <= 2);
    CHECK(tl["token_logprobs"][i].get<double>() <= 0);
  }
  CHECK(joined == text);
  lp["logprobs"] = 6;
  check_serve_error(post_text(lp), 400, "invalid_request");
  json two = body;
  two["prompt"] = {"a", "b"};
  check_serve_error(post_text(two), 400, "unsupported_parameter");
  json none = body;
  none.erase("prompt");
  check_serve_error(post_text(none), 400, "invalid_request");
  json messages = body;
  messages["messages"] = json::array();
  check_serve_error(post_text(messages), 400, "unknown_parameter");
}

TEST_CASE("serve e2e: two concurrent requests with parallel 2 both succeed and a disconnect mid-stream frees the session") {
  Server s({"--parallel", "2", "-c", "2048", "--max-tokens-limit", "2000"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  auto one = [&](uint64_t seed) { return post(s, text_body("Together", 8, seed)); };
  const json want = json::parse(one(3)->body);
  auto f1 = std::async(std::launch::async, one, 3);
  auto f2 = std::async(std::launch::async, one, 3);
  auto r1 = f1.get(), r2 = f2.get();
  REQUIRE(r1);
  REQUIRE(r2);
  CHECK(r1->status == 200);
  CHECK(r2->status == 200);
  CHECK(json::parse(r1->body)["choices"] == want["choices"]);
  CHECK(json::parse(r2->body)["choices"] == want["choices"]);

  // Both sessions stream long generations; the client drops each after its first content piece.
  const double before = metric(s, "ckjit_completion_tokens_total");
  for (uint64_t seed : {4, 5}) {
    json b = text_body("Go on forever", 2000, seed);
    b["stream"] = true;
    b["ignore_eos"] = true;
    const std::string got = stream_then_drop(s.port(), b.dump());
    CHECK(got.find("\"content\":") != std::string::npos);
  }
  // The server notices at its next write and stops generating: both sessions are free again long
  // before 2 x 2000 tokens could have been generated.
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(30 * serve_test::slow_factor());
  while (metric(s, "ckjit_sessions_busy") != 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  CHECK(metric(s, "ckjit_sessions_busy") == 0);
  const double spent = metric(s, "ckjit_completion_tokens_total") - before;
  MESSAGE("tokens generated for the two dropped streams: " << spent);
  CHECK(spent >= 2);
  CHECK(spent < 400);
  auto after = post(s, text_body("Still there?", 3));
  REQUIRE(after);
  CHECK(after->status == 200);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve e2e: a non-streamed client that goes away while queued or while generating frees its place and its session") {
  Server s({"-c", "4096", "--max-tokens-limit", "3000"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  json longer = text_body("Go on forever", 3000, 2);
  longer["ignore_eos"] = true;
  // The first holds the only session; the second waits in line, then its client leaves.
  const int first = send_and_hold(s.port(), longer.dump());
  REQUIRE(first >= 0);
  REQUIRE(wait_metric(s, "ckjit_sessions_busy", 1));
  const int second = send_and_hold(s.port(), longer.dump());
  REQUIRE(second >= 0);
  CHECK(wait_metric(s, "ckjit_queue_depth", 1));
  ::close(second);
  CHECK(wait_metric(s, "ckjit_queue_depth", 0));
  CHECK(metric(s, "ckjit_sessions_busy") == 1);  // the first still generates
  // The first's client leaves mid-generation: the session is freed long before 3000 tokens.
  ::close(first);
  CHECK(wait_metric(s, "ckjit_sessions_busy", 0));
  const double spent = metric(s, "ckjit_completion_tokens_total");
  MESSAGE("tokens generated for the abandoned request: " << spent);
  CHECK(spent < 1000);
  auto after = post(s, text_body("Next", 3));
  REQUIRE(after);
  CHECK(after->status == 200);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve e2e: limits and malformed requests get 4xx OpenAI errors and the server keeps serving") {
  Server s({"--max-body-mb", "1", "--image-max-pixels", "250000", "--max-tokens-limit", "16", "-c", "128"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  auto c = s.client();
  check_serve_error(c->Post("/v1/chat/completions", "{\"messages\": [", "application/json"), 400, "invalid_json");
  check_serve_error(c->Post("/v1/chat/completions", text_body("hi").dump(), "text/plain"), 415, "unsupported_media_type");
  json unknown = text_body("hi");
  unknown["model"] = "gpt-17";
  check_serve_error(post(s, unknown), 404, "model_not_found");
  check_serve_error(post(s, text_body("hi", 17)), 400, "max_tokens_too_large");
  std::string words;
  for (int i = 0; i < 200; ++i) words += "word ";
  check_serve_error(post(s, text_body(words)), 400, "context_length_exceeded");
  json not_image = image_body(image("square-64.png"));
  not_image["messages"][0]["content"][0]["image_url"]["url"] = "data:text/plain;base64," + serve_base64("hello");
  check_serve_error(post(s, not_image), 400, "invalid_image");
  not_image["messages"][0]["content"][0]["image_url"]["url"] = "data:image/png;base64,!!!!";
  check_serve_error(post(s, not_image), 400, "invalid_image");
  // A PNG whose header is fine and whose data is cut: refused when it is decoded.
  const std::string png = serve_file_bytes(image("square-64.png"));
  not_image["messages"][0]["content"][0]["image_url"]["url"] = "data:image/png;base64," + serve_base64(png.substr(0, png.size() / 2));
  check_serve_error(post(s, not_image), 400, "invalid_image");
  not_image["messages"][0]["content"][0]["image_url"]["url"] = "file://" + image("square-64.png");
  check_serve_error(post(s, not_image), 403, "local_images_disabled");
  check_serve_error(post(s, image_body(image("big-640x480.jpg"))), 400, "image_too_large");  // 307200 pixels
  // 408 x 528: under the pixel limit, but its ~220 rows do not fit the 128-token context.
  check_serve_error(post(s, image_body(image("page-small.png"))), 400, "context_length_exceeded");
  json big = text_body("hi");
  big["padding"] = std::string(1200 * 1024, 'x');
  auto r413 = post(s, big);
  if (r413) check_serve_error(r413, 413, "body_too_large");  // else the server closed before the client finished sending: also a refusal
  check_serve_error(c->Get("/no/such/route"), 404, "http_404");
  // Streaming requests are validated before the stream starts: a plain 4xx too.
  json stream_bad = text_body("hi", 17);
  stream_bad["stream"] = true;
  check_serve_error(post(s, stream_bad), 400, "max_tokens_too_large");

  auto ok = post(s, text_body("hi", 3));
  REQUIRE(ok);
  CHECK(ok->status == 200);
  const std::string ok_line = "ckjit_requests_total{path=\"/v1/chat/completions\",status=\"200\"} 1\n";
  const std::string m = metrics_with(s, ok_line);
  CHECK(m.find(ok_line) != std::string::npos);
  CHECK(m.find("ckjit_requests_total{path=\"/v1/chat/completions\",status=\"400\"}") != std::string::npos);
  CHECK(m.find("ckjit_requests_total{path=\"/v1/chat/completions\",status=\"415\"} 1\n") != std::string::npos);
  CHECK(m.find("ckjit_requests_total{path=\"/v1/chat/completions\",status=\"404\"} 1\n") != std::string::npos);
  CHECK(m.find("ckjit_requests_total{path=\"/v1/chat/completions\",status=\"403\"} 1\n") != std::string::npos);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve e2e: every field is honoured or refused by name and finish_reason and completion_tokens say how the answer ended") {
  Server s({"-c", "96"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  // Unknown and unimplemented fields: a 400 that names them, before anything runs.
  for (const char* key : {"frobnicate", "tools", "functions", "audio", "store"}) {
    json b = text_body("hi");
    b[key] = json::array({1});
    auto r = post(s, b);
    check_serve_error(r, 400, std::string(key) == "frobnicate" ? "unknown_parameter" : "unsupported_parameter");
    if (r) CHECK(r->body.find(key) != std::string::npos);
  }
  json b = text_body("hi");
  b["n"] = 17;
  check_serve_error(post(s, b), 400, "invalid_request");
  b["n"] = 1;
  b["logprobs"] = false;
  b["user"] = "someone";
  b["tools"] = nullptr;  // null: not set
  b["response_format"] = {{"type", "text"}};
  auto fine = post(s, b);
  REQUIRE(fine);
  CHECK(fine->status == 200);
  b["top_logprobs"] = 2;  // without logprobs: true
  check_serve_error(post(s, b), 400, "invalid_request");
  b["logprobs"] = true;
  b["top_logprobs"] = 21;
  check_serve_error(post(s, b), 400, "invalid_request");
  b.erase("logprobs");
  b.erase("top_logprobs");
  // Structured output: the answer is a value of the schema; a schema outside the subset is a 400.
  const json schema = json::parse(R"({"type":"object","properties":{"n":{"type":"integer"},"kind":{"enum":["x","y"]}},"required":["n","kind"]})");
  json structured = text_body("hi", 60);
  structured["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"schema", schema}, {"strict", true}}}};
  auto st = post(s, structured);
  REQUIRE(st);
  CHECK(st->status == 200);
  const json answer = json::parse(st->body, nullptr, false);
  REQUIRE(answer.is_object());
  CHECK(answer["choices"][0]["finish_reason"] == "stop");
  const json value = json::parse(answer["choices"][0]["message"]["content"].get<std::string>(), nullptr, false);
  CAPTURE(st->body);
  REQUIRE(value.is_object());
  CHECK(value["n"].is_number_integer());
  CHECK((value["kind"] == "x" || value["kind"] == "y"));
  structured["response_format"]["json_schema"]["schema"] = {{"type", "string"}, {"pattern", "^a"}};
  check_serve_error(post(s, structured), 400, "invalid_json_schema");
  structured["response_format"] = {{"type", "json_schema"}, {"json_schema", {{"name", "t"}, {"shema", schema}}}};
  check_serve_error(post(s, structured), 400, "unknown_parameter");
  // llama-server's grammar field: GBNF.
  json gram = text_body("hi", 20);
  gram["grammar"] = R"(root ::= ("yes" | "no") "." )";
  auto g = post(s, gram);
  REQUIRE(g);
  REQUIRE(g->status == 200);
  const std::string said = json::parse(g->body)["choices"][0]["message"]["content"].get<std::string>();
  CHECK((said == "yes." || said == "no."));
  gram["grammar"] = "root ::= root";
  check_serve_error(post(s, gram), 400, "invalid_grammar");
  b.erase("response_format");
  b["messages"][0]["name"] = "bob";
  check_serve_error(post(s, b), 400, "unsupported_parameter");
  b["messages"][0].erase("name");
  b["logit_bias"] = {{"999999999", 5}};
  check_serve_error(post(s, b), 400, "invalid_request");
  b["logit_bias"] = {{"12", 101}};
  check_serve_error(post(s, b), 400, "invalid_request");
  json so = text_body("hi");
  so["stream_options"] = {{"include_usage", true}};  // without stream: true
  check_serve_error(post(s, so), 400, "invalid_request");

  // The developer role is the system message.
  json dev = text_body("hi", 3, 4), sys = text_body("hi", 3, 4);
  dev["messages"] = {{{"role", "developer"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "hi"}}};
  sys["messages"] = {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "hi"}}};
  auto rd = post(s, dev), rs = post(s, sys);
  REQUIRE(rd);
  REQUIRE(rs);
  CHECK(rd->status == 200);
  CHECK(json::parse(rd->body)["choices"][0]["message"]["content"] == json::parse(rs->body)["choices"][0]["message"]["content"]);

  // The end-of-generation token forced first (logit_bias +100, as OpenAI's "exclusive selection"):
  // finish "stop", no text, and it is not counted.
  auto eos = [&]() {
    auto c = s.client();
    auto r = c->Post("/tokenize", json{{"content", "<|im_end|>"}, {"add_special", false}, {"parse_special", true}}.dump(), "application/json");
    REQUIRE(r);
    REQUIRE(r->status == 200);
    return json::parse(r->body)["tokens"][0].get<int>();
  }();
  json e = text_body("hi", 8);
  e["logit_bias"] = {{std::to_string(eos), 100}};
  auto re = post(s, e);
  REQUIRE(re);
  REQUIRE(re->status == 200);
  const json je = json::parse(re->body);
  CHECK(je["choices"][0]["finish_reason"] == "stop");
  CHECK(je["choices"][0]["message"]["content"] == "");
  CHECK(je["usage"]["completion_tokens"] == 0);
  // max_tokens reached: "length" with max_tokens counted.
  json l = text_body("hi", 5);
  l["ignore_eos"] = true;
  auto rl = post(s, l);
  REQUIRE(rl);
  const json jl = json::parse(rl->body);
  CHECK(jl["choices"][0]["finish_reason"] == "length");
  CHECK(jl["usage"]["completion_tokens"] == 5);
  // The 96-token context fills mid-answer: "length" too, with what was generated.
  json full = text_body("hi", 200);
  full["ignore_eos"] = true;
  auto rf = post(s, full);
  REQUIRE(rf);
  REQUIRE(rf->status == 200);
  const json jf = json::parse(rf->body);
  CHECK(jf["choices"][0]["finish_reason"] == "length");
  CHECK(jf["usage"]["completion_tokens"].get<int>() < 96);
  CHECK(jf["usage"]["completion_tokens"].get<int>() > 50);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve e2e: n choices are the requests with seeds seed+i and logprobs follow the sent text and a request's image token limit") {
  Server s({"--image-max-tokens", "64"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  auto answer = [&](const json& b) {
    auto r = post(s, b);
    REQUIRE(r);
    INFO(r->body);
    REQUIRE(r->status == 200);
    return json::parse(r->body);
  };
  // n = 3: choice i is what the same request with seed 7 + i gives alone; the prompt counts once.
  json three = text_body("Tell me", 6, 7);
  three["n"] = 3;
  const json j3 = answer(three);
  REQUIRE(j3["choices"].size() == 3);
  int64_t completion = 0;
  for (int i = 0; i < 3; ++i) {
    const json one = answer(text_body("Tell me", 6, 7 + i));
    CHECK(j3["choices"][i]["index"] == i);
    CHECK(j3["choices"][i]["message"]["content"] == one["choices"][0]["message"]["content"]);
    CHECK(j3["choices"][i]["finish_reason"] == one["choices"][0]["finish_reason"]);
    completion += one["usage"]["completion_tokens"].get<int64_t>();
    if (i == 0) CHECK(j3["usage"]["prompt_tokens"] == one["usage"]["prompt_tokens"]);
  }
  CHECK(j3["usage"]["completion_tokens"] == completion);
  // Streamed, every choice gets its role chunk, its pieces and one finish, by index.
  json streamed = three;
  streamed["stream"] = true;
  auto rs = post(s, streamed);
  REQUIRE(rs);
  std::vector<std::string> texts(3);
  std::vector<int> roles(3, 0), finishes(3, 0);
  for (const std::string& e : sse_events(rs->body)) {
    if (e == "[DONE]") continue;
    const json c = json::parse(e);
    const int i = c["choices"][0]["index"];
    const json& d = c["choices"][0]["delta"];
    if (d.contains("role")) ++roles[size_t(i)];
    if (d.contains("content")) texts[size_t(i)] += d["content"].get<std::string>();
    if (!c["choices"][0]["finish_reason"].is_null()) ++finishes[size_t(i)];
  }
  for (int i = 0; i < 3; ++i) {
    CHECK(texts[size_t(i)] == j3["choices"][i]["message"]["content"]);
    CHECK(roles[size_t(i)] == 1);
    CHECK(finishes[size_t(i)] == 1);
  }

  // logprobs: one entry per answer token, its bytes the answer; greedy picks the most likely.
  json lp = text_body("Tell me", 8, 3);
  lp["temperature"] = 0;
  lp["logprobs"] = true;
  lp["top_logprobs"] = 3;
  const json jl = answer(lp);
  const std::string content = jl["choices"][0]["message"]["content"];
  const json& entries = jl["choices"][0]["logprobs"]["content"];
  CHECK(entries.size() == size_t(jl["usage"]["completion_tokens"].get<int>()));
  std::string joined;
  for (const json& t : entries) {
    std::string bytes;
    for (int b : t["bytes"]) bytes += char(b);
    joined += bytes;
    CHECK(t["logprob"].get<double>() <= 0);
    REQUIRE(t["top_logprobs"].size() == 3);
    double mass = 0, prev = 1;
    for (const json& a : t["top_logprobs"]) {
      CHECK(a["logprob"].get<double>() <= prev);
      prev = a["logprob"].get<double>();
      mass += std::exp(prev);
    }
    CHECK(mass <= 1.0 + 1e-6);
    CHECK(t["top_logprobs"][0]["bytes"] == t["bytes"]);  // greedy: the best token
    CHECK(t["top_logprobs"][0]["logprob"].get<double>() == doctest::Approx(t["logprob"].get<double>()));
  }
  CHECK(joined == content);
  // Streamed: the same entries, spread over the chunks.
  json lps = lp;
  lps["stream"] = true;
  auto rls = post(s, lps);
  REQUIRE(rls);
  json streamed_entries = json::array();
  for (const std::string& e : sse_events(rls->body)) {
    if (e == "[DONE]") continue;
    const json c = json::parse(e);
    if (!c["choices"].empty() && c["choices"][0]["logprobs"].is_object())
      for (const json& t : c["choices"][0]["logprobs"]["content"]) streamed_entries.push_back(t);
  }
  CHECK(streamed_entries == entries);
  // A stop string: the tokens after it are dropped, the one it starts in is kept.
  if (content.size() >= 4) {
    json cut = lp;
    cut["stop"] = content.substr(2, 2);
    const json jc = answer(cut);
    const std::string kept = jc["choices"][0]["message"]["content"];
    CHECK(kept.size() < content.size());
    size_t before_last = 0;
    const json& ce = jc["choices"][0]["logprobs"]["content"];
    REQUIRE(!ce.empty());
    for (size_t i = 0; i + 1 < ce.size(); ++i) before_last += ce[i]["bytes"].size();
    CHECK(before_last < std::max<size_t>(kept.size(), 1));
    CHECK(before_last + ce.back()["bytes"].size() >= kept.size());
  }

  // A request's own image token limit: fewer rows than the server's, cached apart; above the
  // server's --image-max-tokens, or min above max: a 400.
  const json full = answer(image_body(image("square-64.png")));
  json small = image_body(image("square-64.png"));
  small["image_max_tokens"] = 4;
  const json js = answer(small);
  CHECK(js["usage"]["prompt_tokens"].get<int>() < full["usage"]["prompt_tokens"].get<int>());
  CHECK(full["usage"]["prompt_tokens"].get<int>() - js["usage"]["prompt_tokens"].get<int>() >= 5);  // 9 rows, then at most 4
  small["image_max_tokens"] = 65;
  check_serve_error(post(s, small), 400, "invalid_request");
  small["image_max_tokens"] = 16;
  small["image_min_tokens"] = 32;
  check_serve_error(post(s, small), 400, "invalid_request");
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve e2e: /tokenize and /detokenize round trip and --api-key guards every route but /health and --cors answers preflights") {
  Server s({"--api-key", "sekrit", "--cors", "https://app.example"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  auto c = s.client();
  check_serve_error(c->Get("/v1/models"), 401, "invalid_api_key");
  check_serve_error(post(s, text_body("hi")), 401, "invalid_api_key");
  httplib::Headers wrong = {{"Authorization", "Bearer sekriT"}};
  check_serve_error(c->Get("/v1/models", wrong), 401, "invalid_api_key");
  auto health = c->Get("/health");
  REQUIRE(health);
  CHECK(health->status == 200);
  CHECK(health->get_header_value("Access-Control-Allow-Origin") == "https://app.example");
  auto pre = c->Options("/v1/chat/completions");
  REQUIRE(pre);
  CHECK(pre->status == 204);
  CHECK(pre->get_header_value("Access-Control-Allow-Headers").find("Authorization") != std::string::npos);
  c->set_bearer_token_auth("sekrit");
  auto models = c->Get("/v1/models");
  REQUIRE(models);
  CHECK(models->status == 200);
  auto tok = c->Post("/tokenize", json{{"content", "Hello world<|im_end|>"}, {"with_pieces", true}}.dump(), "application/json");
  REQUIRE(tok);
  REQUIRE(tok->status == 200);
  const json tj = json::parse(tok->body);
  REQUIRE(tj["tokens"].size() >= 3);
  std::string joined;
  json ids = json::array();
  for (const json& t : tj["tokens"]) joined += t["piece"].get<std::string>(), ids.push_back(t["id"]);
  CHECK(joined == "Hello world<|im_end|>");
  // parse_special false: the marker is plain text, more tokens.
  auto plain = c->Post("/tokenize", json{{"content", "Hello world<|im_end|>"}, {"parse_special", false}}.dump(), "application/json");
  REQUIRE(plain);
  CHECK(json::parse(plain->body)["tokens"].size() > tj["tokens"].size());
  auto det = c->Post("/detokenize", json{{"tokens", ids}}.dump(), "application/json");
  REQUIRE(det);
  REQUIRE(det->status == 200);
  CHECK(json::parse(det->body)["content"] == "Hello world<|im_end|>");
  check_serve_error(c->Post("/detokenize", json{{"tokens", {-1}}}.dump(), "application/json"), 400, "invalid_request");
  check_serve_error(c->Post("/tokenize", json{{"text", "x"}}.dump(), "application/json"), 400, "unknown_parameter");
  check_serve_error(c->Post("/tokenize", "nope", "application/json"), 400, "invalid_json");
  CHECK(s.process().stop() == 0);
}

// A long generation on a server with --drain-seconds D, once it runs.
struct LongRequest {
  LongRequest(Server& s, int tokens, bool stream = false) : s(s) {
    json b = text_body("Long", tokens);
    b["ignore_eos"] = true;
    if (stream) b["stream"] = true;
    answer = std::async(std::launch::async, [this, b] { return post(this->s, b, 120); });
    for (int i = 0; i < 500 && metric(s, "ckjit_sessions_busy") < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Server& s;
  std::future<httplib::Result> answer;
};

bool health_is(const Server& s, int status) {
  for (int i = 0; i < 200; ++i) {
    auto r = s.client()->Get("/health");
    if (r && r->status == status) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

TEST_CASE("serve e2e: SIGTERM drains: the request in flight finishes whole and new ones get 503 and /health says draining and exit 0") {
  Server s({"-c", "4096", "--max-tokens-limit", "3000", "--drain-seconds", "120"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  LongRequest running(s, 1000);
  REQUIRE(metric(s, "ckjit_sessions_busy") == 1);
  s.process().signal(SIGTERM);
  CHECK(health_is(s, 503));
  auto refused = post(s, text_body("hi", 2));
  check_serve_error(refused, 503, "shutting_down");
  if (refused) CHECK(refused->get_header_value("Retry-After") == "1");
  auto r = running.answer.get();
  REQUIRE(r);
  INFO(r->body);
  REQUIRE(r->status == 200);
  const json j = json::parse(r->body);
  CHECK(j["choices"][0]["finish_reason"] == "length");
  CHECK(j["usage"]["completion_tokens"] == 1000);
  // The server leaves by itself once nothing is in flight.
  for (int i = 0; i < 1000 && s.process().running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK_FALSE(s.process().running());
  CHECK(s.process().stop() == 0);
  INFO(s.log());
  CHECK(s.log().find("drained") != std::string::npos);
}

TEST_CASE("serve e2e: past --max-queue a request gets 503 server_busy with Retry-After at once and the line is served") {
  Server s({"-c", "4096", "--max-tokens-limit", "3000", "--max-queue", "1"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  LongRequest running(s, 600);
  auto queued = std::async(std::launch::async, [&] { return post(s, text_body("Next", 3)); });
  for (int i = 0; i < 500 && metric(s, "ckjit_queue_depth") < 1; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  REQUIRE(metric(s, "ckjit_queue_depth") == 1);
  auto busy = post(s, text_body("One more", 3));
  check_serve_error(busy, 503, "server_busy");
  if (busy) {
    CHECK(busy->get_header_value("Retry-After") == "1");
    CHECK(busy->body.find("--max-queue 1") != std::string::npos);
  }
  auto a = running.answer.get(), b = queued.get();
  REQUIRE(a);
  REQUIRE(b);
  CHECK(a->status == 200);
  CHECK(b->status == 200);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve e2e: SIGTERM drains a stream too: every token then the finish then DONE and exit 0") {
  Server s({"-c", "4096", "--max-tokens-limit", "3000", "--drain-seconds", "120"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  LongRequest running(s, 800, /*stream=*/true);
  s.process().signal(SIGTERM);
  CHECK(health_is(s, 503));
  auto r = running.answer.get();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  const std::vector<std::string> events = sse_events(r->body);
  REQUIRE(events.size() >= 2);
  CHECK(events.back() == "[DONE]");
  CHECK(json::parse(events[events.size() - 2])["choices"][0]["finish_reason"] == "length");
  CHECK(r->body.find("shutting_down") == std::string::npos);
  for (int i = 0; i < 1000 && s.process().running(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  CHECK(s.process().stop() == 0);
  CHECK(s.log().find("drained") != std::string::npos);
}

TEST_CASE("serve e2e: a second SIGINT stops at once and a drain past --drain-seconds cuts the answer with 503 and exit status 0") {
  {
    Server s({"-c", "4096", "--max-tokens-limit", "3000", "--drain-seconds", "600"});
    REQUIRE_MESSAGE(s.ok(), s.log());
    LongRequest running(s, 3000);
    s.process().signal(SIGINT);
    CHECK(health_is(s, 503));
    CHECK(s.process().stop(SIGINT) == 0);  // within stop's 20 s, long before the 600 s drain
    // A generation the signal cut short is no finished answer: 503 shutting_down (or the connection
    // closed); no hang, and never a 200 that looks complete.
    auto r = running.answer.get();
    if (r) check_serve_error(r, 503, "shutting_down");
  }
  Server s({"-c", "4096", "--max-tokens-limit", "3000", "--drain-seconds", "1"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  LongRequest running(s, 3000);
  CHECK(s.process().stop(SIGTERM) == 0);
  auto r = running.answer.get();
  if (r) check_serve_error(r, 503, "shutting_down");
  CHECK(s.log().find("still running after 1 s") != std::string::npos);
}

}  // TEST_SUITE
