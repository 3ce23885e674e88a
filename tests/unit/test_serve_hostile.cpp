// `ckjit serve` against hostile clients (loopback only, bounded in count and time): bodies that
// would crash or get past a limit, slow clients that would hold every worker, headers without
// end, refused Host names, and the flags that would leave the server open. After each case the
// server answers /health and a normal request gives the same text as before it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tests/unit/cli_run.h"
#include "tests/unit/serve_process.h"
#include "tests/unit/serve_error_check.h"
#include "tests/unit/serve_test_util.h"

using json = nlohmann::json;
using serve_test::Server;
using serve_test::slow_factor;
using Clock = std::chrono::steady_clock;

namespace {

// A raw connection: what a hostile client can send that an HTTP library would not.
class Conn {
 public:
  explicit Conn(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(uint16_t(port));
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
  }
  ~Conn() {
    if (fd_ >= 0) ::close(fd_);
  }
  Conn(const Conn&) = delete;
  Conn& operator=(const Conn&) = delete;
  bool connected() const { return connected_; }

  bool send_all(const std::string& s) {
    for (size_t at = 0; at < s.size();) {
      const ssize_t n = ::send(fd_, s.data() + at, s.size() - at, MSG_NOSIGNAL);
      if (n <= 0) return false;
      at += size_t(n);
    }
    return true;
  }
  // Everything the server sends until it closes or `seconds` pass.
  std::string read_until_close(double seconds) {
    std::string out;
    const auto end = Clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
    while (Clock::now() < end) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char buf[65536];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.append(buf, size_t(n));
    }
    return out;
  }
  // The first response's status line and headers, read until the blank line (or `seconds`).
  std::string read_head(double seconds) {
    std::string out;
    const auto end = Clock::now() + std::chrono::milliseconds(int64_t(seconds * 1000));
    while (Clock::now() < end && out.find("\r\n\r\n") == std::string::npos) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char c;
      const ssize_t n = ::recv(fd_, &c, 1, 0);
      if (n <= 0) {
        closed_ = true;
        break;
      }
      out.push_back(c);
    }
    return out;
  }
  bool closed() const { return closed_; }

 private:
  int fd_ = -1;
  bool connected_ = false, closed_ = false;
};

int status_of(const std::string& response) {
  if (response.rfind("HTTP/1.1 ", 0) != 0 || response.size() < 12) return -1;
  return std::stoi(response.substr(9, 3));
}

json text_body(const std::string& text, int max_tokens = 4, uint64_t seed = 1) {
  return {{"messages", {{{"role", "user"}, {"content", text}}}}, {"max_tokens", max_tokens}, {"seed", seed}, {"temperature", 0.7}};
}

// The reference request's text; a 503 (a full line) is retried after its Retry-After, as a client would.
std::string answer_text(const Server& s) {
  auto post = [&] { return s.client()->Post("/v1/chat/completions", text_body("read the page", 4, 7).dump(), "application/json"); };
  auto r = post();
  for (int i = 0; i < 20 && r && r->status == 503; ++i) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    r = post();
  }
  if (!r || r->status != 200) return "<no answer: " + std::string(r ? r->body : "no response") + ">";
  return json::parse(r->body)["choices"][0]["message"]["content"].get<std::string>();
}

// The reference request's answer, which must be a real one (the cases compare against it).
std::string reference_answer(const Server& s) {
  const std::string a = answer_text(s);
  REQUIRE_MESSAGE(a.rfind("<no answer", 0) != 0, a);
  return a;
}

// The server still answers /health and gives `expected` for the reference request.
void still_serving(const Server& s, const std::string& expected) {
  auto h = s.client()->Get("/health");
  REQUIRE(h);
  CHECK(h->status == 200);
  CHECK(answer_text(s) == expected);
}

std::string deep(const std::string& open, const std::string& close, size_t n) {
  std::string s;
  s.reserve((open.size() + close.size()) * n);
  for (size_t i = 0; i < n; ++i) s += open;
  for (size_t i = 0; i < n; ++i) s += close;
  return s;
}

std::string post_head(const std::string& path, const std::string& extra_headers) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n" + extra_headers + "\r\n";
}

}  // namespace

TEST_SUITE("serve") {

TEST_CASE("serve hostile: JSON nested a million deep (arrays or objects in a field or a schema or /tokenize) is a 400 and the server goes on") {
  Server s({});
  REQUIRE_MESSAGE(s.ok(), s.log());
  const std::string before = reference_answer(s);
  auto c = s.client();
  const size_t n = 1000000;
  const std::string head = R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":2,)";
  const std::string schema = head + R"("response_format":{"type":"json_schema","json_schema":{"name":"x","schema":)";
  for (const std::string& body : {head + R"("stop":)" + deep("[", "]", n) + "}",
                                  head + R"("user":)" + deep(R"({"a":)", "}", n) + "}",
                                  schema + deep("[", "]", n) + "}}}",
                                  schema + deep(R"({"items":)", "}", n) + "}}}"}) {
    auto r = c->Post("/v1/chat/completions", body, "application/json");
    check_serve_error(r, 400, "invalid_json");
    CHECK(r->body.find("deeper than 64") != std::string::npos);
  }
  check_serve_error(c->Post("/tokenize", R"({"content":)" + deep("[", "]", n) + "}", "application/json"), 400, "invalid_json");
  check_serve_error(c->Post("/detokenize", R"({"tokens":)" + deep("[", "]", n) + "}", "application/json"), 400, "invalid_json");
  // 63 levels inside the body's object still parse: the field's own check answers.
  check_serve_error(c->Post("/v1/chat/completions", head + R"("stop":)" + deep("[", "]", 62) + "}", "application/json"), 400, "invalid_request");
  still_serving(s, before);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve hostile: chunked and compressed bodies are refused before they are read whatever their size") {
  Server s({"--max-body-mb", "1"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  const std::string before = reference_answer(s);
  {
    // 3 MB in one chunk under a 1 MB limit: httplib would read it whole.
    Conn k(s.port());
    REQUIRE(k.connected());
    const std::string chunk(3 << 20, ' ');
    char size_hex[32];
    std::snprintf(size_hex, sizeof size_hex, "%zx\r\n", chunk.size());
    k.send_all(post_head("/v1/chat/completions", "Transfer-Encoding: chunked\r\n"));
    k.send_all(size_hex);
    k.send_all(chunk.substr(0, 65536));  // the answer comes before the rest is sent
    const std::string head = k.read_head(10.0 * slow_factor());
    INFO(head);
    CHECK(status_of(head) == 411);
  }
  for (const char* enc : {"gzip", "br", "deflate"}) {
    Conn k(s.port());
    REQUIRE(k.connected());
    const std::string body(51 * 1024, '\x1f');  // what it holds does not matter: it is never inflated
    k.send_all(post_head("/v1/chat/completions", std::string("Content-Encoding: ") + enc + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n") + body);
    const std::string answer = k.read_until_close(10.0 * slow_factor());
    INFO(enc << ": " << answer.substr(0, 300));
    CHECK(status_of(answer) == 415);
    CHECK(answer.find("unsupported_encoding") != std::string::npos);
    CHECK(k.closed());  // the unread body is never taken for a next request
  }
  still_serving(s, before);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve hostile: slow clients cannot hold the workers: /health answers and the deadline cuts them and the line is bounded with 503") {
  // The deadline is wall time on idle sockets, not model work: the same under the sanitizers.
  const int timeout_s = 10;
  Server s({"--http-threads", "2", "--request-timeout", std::to_string(timeout_s)});
  REQUIRE_MESSAGE(s.ok(), s.log());
  const std::string before = reference_answer(s);

  // Two clients that send a request's first bytes and then one byte now and then: both workers
  // (one that finds a worker still busy goes through the triage's line to the next one free).
  std::vector<std::unique_ptr<Conn>> slow;
  for (int i = 0; i < 2; ++i) {
    slow.push_back(std::make_unique<Conn>(s.port()));
    REQUIRE(slow.back()->connected());
    slow.back()->send_all("GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ");
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  for (auto& k : slow) k->send_all("a");

  // /health is answered at once by the triage, not after the slow ones.
  const auto t0 = Clock::now();
  auto h = s.client(5)->Get("/health");
  REQUIRE(h);
  CHECK(h->status == 200);
  CHECK(Clock::now() - t0 < std::chrono::seconds(2 * slow_factor()));
  {
    Conn k(s.port());  // answered by the triage too, under the same header line cap
    std::string req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; i < 200; ++i) req += "X-Pad: " + std::to_string(i) + "\r\n";
    k.send_all(req + "\r\n");
    const std::string answer = k.read_until_close(5.0 * slow_factor());
    CHECK(status_of(answer) != 200);
    CHECK(k.closed());
  }
  {
    Conn k(s.port());  // a /health request that stops half-way is closed by the triage within its second
    k.send_all("GET /hea");
    k.read_until_close(4.0);
    CHECK(k.closed());
  }

  // Two more slow ones fill the line (2 places); the next request gets 503 with Retry-After at once.
  std::vector<std::unique_ptr<Conn>> waiting;
  for (int i = 0; i < 2; ++i) {
    waiting.push_back(std::make_unique<Conn>(s.port()));
    REQUIRE(waiting.back()->connected());
    std::this_thread::sleep_for(std::chrono::milliseconds(700));  // the triage waits 500 ms for bytes that never come
  }
  {
    Conn k(s.port());
    REQUIRE(k.connected());
    const std::string body = text_body("hi").dump();
    k.send_all(post_head("/v1/chat/completions", "Content-Length: " + std::to_string(body.size()) + "\r\n") + body);
    const std::string answer = k.read_until_close(5.0 * slow_factor());
    INFO(answer.substr(0, 400));
    CHECK(status_of(answer) == 503);
    CHECK(answer.find("Retry-After: 1") != std::string::npos);
    CHECK(answer.find("server_busy") != std::string::npos);
  }
  {
    // A client still sending its body when the 503 comes (a large image, a loaded machine) must
    // be able to send it all and then read the answer: the triage reads the rest away while it
    // comes, and closes only after; a close before it came fails the client's send (EPIPE).
    Conn k(s.port());
    REQUIRE(k.connected());
    const size_t chunk = 16384, chunks = 48;
    REQUIRE(k.send_all(post_head("/v1/chat/completions", "Content-Length: " + std::to_string(chunk * chunks) + "\r\n")));
    std::this_thread::sleep_for(std::chrono::milliseconds(200));  // the 503 is sent meanwhile
    bool sent = true;
    for (size_t i = 0; i < chunks && sent; ++i) {
      sent = k.send_all(std::string(chunk, 'x'));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    CHECK(sent);
    const std::string answer = k.read_until_close(5.0 * slow_factor());
    CHECK(status_of(answer) == 503);
    CHECK(k.closed());
  }

  // Within the request deadline (plus a margin) every slow client is cut off, and a request that
  // waited in line behind them is served.
  for (auto& k : slow) {
    k->read_until_close(timeout_s + 3.0 * slow_factor());
    CHECK(k->closed());
  }
  still_serving(s, before);
  for (auto& k : waiting) {
    k->read_until_close(timeout_s + 3.0 * slow_factor());
    CHECK(k->closed());
  }
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve hostile: headers without end and invalid UTF-8 and huge or non-finite numbers and pipelined floods get 4xx or a close and never a 5xx") {
  Server s({});
  REQUIRE_MESSAGE(s.ok(), s.log());
  const std::string before = reference_answer(s);
  {
    Conn k(s.port());  // 500 header lines (the cap is 128)
    std::string req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; i < 500; ++i) req += "X-Pad-" + std::to_string(i) + ": v\r\n";
    k.send_all(req + "\r\n");
    const std::string answer = k.read_until_close(5.0 * slow_factor());
    CHECK(status_of(answer) != 200);
    CHECK(k.closed());
  }
  {
    Conn k(s.port());  // 80 KB of header bytes in lines under httplib's own 8 KB line limit
    std::string req = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    for (int i = 0; i < 12; ++i) req += "X-Pad: " + std::string(7000, 'a') + "\r\n";
    k.send_all(req + "\r\n");
    const std::string answer = k.read_until_close(5.0 * slow_factor());
    CHECK(status_of(answer) != 200);
    CHECK(k.closed());
  }
  {
    Conn k(s.port());  // 10^4 tiny requests in one write: answered a few at a time, then closed
    std::string flood;
    for (int i = 0; i < 10000; ++i) flood += "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    k.send_all(flood);
    const std::string answer = k.read_until_close(10.0 * slow_factor());
    CHECK(status_of(answer) == 200);
    CHECK(answer.find("HTTP/1.1 5") == std::string::npos);
  }
  auto c = s.client();
  auto no_5xx = [&](const std::string& body) {
    auto r = c->Post("/v1/chat/completions", body, "application/json");
    REQUIRE(r);
    INFO(body.substr(0, 200) << " -> " << r->status << " " << r->body.substr(0, 300));
    CHECK(r->status < 500);
    return r->status;
  };
  CHECK(no_5xx(R"({"messages":[{"role":"user","content":"hi"}],"temperature":1e999})") == 400);
  CHECK(no_5xx(R"({"messages":[{"role":"user","content":"hi"}],"temperature":NaN})") == 400);
  CHECK(no_5xx(R"({"messages":[{"role":"user","content":"hi"}],"top_k":1e300})") == 400);
  CHECK(no_5xx(R"({"messages":[{"role":"user","content":"hi"}],"seed":123456789012345678901234567890})") == 400);
  CHECK(no_5xx(R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":-9223372036854775808})") == 400);
  CHECK(no_5xx(R"({"messages":[{"role":"user","content":"hi"}],"logit_bias":{"1":1e308}})") == 400);
  no_5xx("{\"messages\":[{\"role\":\"user\",\"content\":\"\xff\xfe\xc3\x28 bad bytes\"}],\"max_tokens\":2}");
  no_5xx("{\"messages\":[{\"role\":\"user\",\"content\":\"\\ud800 lone surrogate\"}],\"max_tokens\":2}");
  still_serving(s, before);
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve hostile: bodies without a length or over the limit are refused from the headers and pipelined requests are all answered") {
  Server s({"--max-body-mb", "1", "--api-key", "k"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  const std::string auth = "Authorization: Bearer k\r\n";
  {
    Conn k(s.port());  // no Content-Length: httplib would read until the client closes
    k.send_all(post_head("/v1/chat/completions", auth) + std::string(100000, ' '));
    const std::string head = k.read_head(5.0 * slow_factor());
    CHECK(status_of(head) == 411);
    CHECK(head.find("Connection: close") != std::string::npos);
  }
  {
    Conn k(s.port());  // 5 MB announced under a 1 MB limit: answered before any of it is sent
    k.send_all(post_head("/v1/chat/completions", auth + "Content-Length: 5000000\r\n"));
    const auto t0 = Clock::now();
    CHECK(status_of(k.read_head(5.0 * slow_factor())) == 413);
    CHECK(Clock::now() - t0 < std::chrono::seconds(2 * slow_factor()));
  }
  {
    Conn k(s.port());  // Expect: 100-continue with a wrong key: the 401 comes instead of the 100
    k.send_all(post_head("/v1/chat/completions", "Authorization: Bearer wrong\r\nExpect: 100-continue\r\nContent-Length: 10\r\n"));
    CHECK(status_of(k.read_head(5.0 * slow_factor())) == 401);
  }
  {
    Conn k(s.port());  // headers whose lines end in "\r\r\n" count toward the caps too
    std::string req = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth;
    for (int i = 0; i < 5000; ++i) req += "X-Pad: " + std::string(20, 'a') + "\r\r\n";
    k.send_all(req + "\r\n");
    const std::string answer = k.read_until_close(5.0 * slow_factor());
    CHECK(status_of(answer) != 200);
    CHECK(k.closed());
  }
  {
    Conn k(s.port());  // two requests in one packet: both answered
    const std::string one = "GET /v1/models HTTP/1.1\r\nHost: 127.0.0.1\r\n" + auth + "\r\n";
    k.send_all(one + one + "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    const std::string answer = k.read_until_close(5.0 * slow_factor());
    size_t oks = 0;
    for (size_t at = 0; (at = answer.find("HTTP/1.1 200", at)) != std::string::npos; ++at) ++oks;
    CHECK(oks == 3);
  }
  {
    Conn k(s.port());  // HEAD /health needs no key, as GET /health
    k.send_all("HEAD /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    CHECK(status_of(k.read_head(5.0 * slow_factor())) == 200);
  }
  CHECK(s.process().stop() == 0);
}

TEST_CASE("serve hostile: a Host name that is not the server's is refused on loopback (DNS rebinding) and --hosts widens it") {
  Server s({});
  REQUIRE_MESSAGE(s.ok(), s.log());
  auto ask = [&](const std::string& host, const std::string& path = "/v1/models") {
    Conn k(s.port());
    k.send_all("GET " + path + " HTTP/1.1\r\n" + (host.empty() ? "" : "Host: " + host + "\r\n") + "Connection: close\r\n\r\n");
    return k.read_until_close(5.0 * slow_factor());
  };
  const std::string evil = ask("rebind.attacker.example:8080");
  CHECK(status_of(evil) == 403);
  CHECK(evil.find("host_not_allowed") != std::string::npos);
  CHECK(evil.find("Connection: close") != std::string::npos);
  for (const char* look_alike : {"127.evil.example", "localhost.evil.example", "127.0.0.1.nip.example", "[::1].evil"})
    CHECK(status_of(ask(look_alike)) == 403);
  CHECK(status_of(ask("rebind.attacker.example", "/health")) == 200);  // health checkers send any name
  for (const char* ok : {"127.0.0.1:1234", "127.9.8.7", "localhost", "LOCALHOST.", "app.localhost", "[::1]:80", ""}) CHECK(status_of(ask(ok)) == 200);
  CHECK(s.process().stop() == 0);

  Server wide({"--hosts", "ocr.internal,other.example"});
  REQUIRE_MESSAGE(wide.ok(), wide.log());
  Conn k(wide.port());
  k.send_all("GET /v1/models HTTP/1.1\r\nHost: ocr.internal:8080\r\nConnection: close\r\n\r\n");
  CHECK(status_of(k.read_until_close(5.0 * slow_factor())) == 200);
  Conn e(wide.port());
  e.send_all("GET /v1/models HTTP/1.1\r\nHost: rebind.attacker.example\r\nConnection: close\r\n\r\n");
  CHECK(status_of(e.read_until_close(5.0 * slow_factor())) == 403);
  CHECK(wide.process().stop() == 0);
}

TEST_CASE("serve hostile: flags that would leave the server open are errors that say what to give") {
  const serve_test::TinyPair& p = serve_test::tiny_pair();
  const std::string m = " -m '" + p.model + "' --port 0 ";
  const CliResult open_host = run_ckjit("serve" + m + "--host 0.0.0.0");
  CHECK(open_host.status != 0);
  CHECK(open_host.output.find("--no-api-key-ok") != std::string::npos);
  const CliResult empty_key = run_ckjit("serve" + m + "--api-key ''");
  CHECK(empty_key.status != 0);
  CHECK(empty_key.output.find("--api-key is empty") != std::string::npos);
  const CliResult bare = run_ckjit("serve" + m + "--allow-local-images");
  CHECK(bare.status != 0);
  CHECK(bare.output.find("--allow-local-images DIR") != std::string::npos);
  const CliResult bare_mid = run_ckjit("serve --allow-local-images" + m);
  CHECK(bare_mid.status != 0);
  CHECK(bare_mid.output.find("--allow-local-images DIR") != std::string::npos);
  const CliResult no_dir = run_ckjit("serve" + m + "--allow-local-images /nonexistent/images");
  CHECK(no_dir.status != 0);
  CHECK(no_dir.output.find("is not a folder") != std::string::npos);
}

TEST_CASE("serve hostile: --no-cache-sharing reuses prompt rows and images only within one 'user' and without it they are shared") {
  const std::string img = (std::filesystem::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / "square-64.png").string();
  auto body = [&](const std::string& user) {
    json b = {{"messages", {{{"role", "user"},
                             {"content", {{{"type", "image_url"}, {"image_url", {{"url", serve_png_uri(img)}}}},
                                          {{"type", "text"}, {"text", "a shared long prefix of words that repeats"}}}}}}},
              {"max_tokens", 2}, {"seed", 3}};
    if (!user.empty()) b["user"] = user;
    return b.dump();
  };
  // (cached prompt rows, image-cache hits so far) after a request.
  auto cached = [&](const Server& s, const std::string& user) {
    auto r = s.client()->Post("/v1/chat/completions", body(user), "application/json");
    REQUIRE(r);
    REQUIRE_MESSAGE(r->status == 200, r->body);
    return json::parse(r->body)["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>();
  };
  auto hits = [&](const Server& s) {
    auto m = s.client()->Get("/metrics");
    REQUIRE(m);
    const std::string name = "\nckjit_image_cache_hits_total ";
    const size_t at = m->body.find(name);
    REQUIRE(at != std::string::npos);
    return std::stoi(m->body.substr(at + name.size()));
  };
  {
    Server s({});
    REQUIRE_MESSAGE(s.ok(), s.log());
    CHECK(cached(s, "alice") == 0);
    CHECK(cached(s, "mallory") > 0);  // shared by default, as llama-server's cache is
    CHECK(hits(s) == 1);
    CHECK(s.process().stop() == 0);
  }
  Server s({"--no-cache-sharing"});
  REQUIRE_MESSAGE(s.ok(), s.log());
  CHECK(cached(s, "alice") == 0);
  CHECK(cached(s, "mallory") == 0);
  CHECK(hits(s) == 0);
  CHECK(cached(s, "mallory") > 0);  // the same user's own rows and image are found
  CHECK(hits(s) == 1);
  CHECK(cached(s, "") == 0);  // no user: a scope of its own
  CHECK(cached(s, "") == 0);
  CHECK(hits(s) == 1);
  CHECK(s.process().stop() == 0);
}

}  // TEST_SUITE
