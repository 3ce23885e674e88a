// The scale-out recipe (tools/serve/haproxy.cfg.in): HAProxy with health checks in front of two
// `ckjit serve` replicas on 127.0.0.1. A bounded load from a few threads; one replica is killed
// mid-load; every request either succeeds or fails cleanly (a 5xx from HAProxy or a closed
// connection, within the client's timeout, never a hang), and every request after HAProxy has
// seen the replica go succeeds on the survivor.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>

#include "tests/unit/serve_process.h"
#include "tests/unit/skip.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* kHaproxy = "/usr/sbin/haproxy";

// A port free right now (bound to 0, read, closed): HAProxy's frontend.
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t n = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// The configuration as the recipe makes it: tools/serve/haproxy_config.sh FRONTEND REPLICA...
std::string config(int front, const std::vector<int>& replicas) {
  std::string cmd = "bash " + (fs::path(CKJIT_SOURCE_DIR) / "tools" / "serve" / "haproxy_config.sh").string() + " 127.0.0.1:" + std::to_string(front);
  for (int r : replicas) cmd += " 127.0.0.1:" + std::to_string(r);
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), &::pclose);
  REQUIRE(p);
  std::string cfg;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p.get())) > 0;) cfg.append(buf, n);
  REQUIRE(cfg.find("@") == std::string::npos);
  REQUIRE(cfg.find("server r" + std::to_string(replicas.size()) + " 127.0.0.1:" + std::to_string(replicas.back()) + " check") != std::string::npos);
  return cfg;
}

enum class Outcome { ok, clean_error, bad };

Outcome one_request(int port, int timeout_s) {
  httplib::Client c("127.0.0.1", port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(timeout_s, 0);
  const json body = {{"messages", {{{"role", "user"}, {"content", "Balance me"}}}}, {"max_tokens", 4}, {"seed", 1}};
  auto r = c.Post("/v1/chat/completions", body.dump(), "application/json");
  if (!r) return r.error() == httplib::Error::Read || r.error() == httplib::Error::Connection ? Outcome::clean_error : Outcome::bad;
  if (r->status == 200) return json::parse(r->body, nullptr, false).contains("choices") ? Outcome::ok : Outcome::bad;
  return r->status >= 500 ? Outcome::clean_error : Outcome::bad;
}

}  // namespace

TEST_SUITE("serve") {

TEST_CASE("serve haproxy: two replicas behind health-checked HAProxy survive one replica killed mid-load") {
  if (!fs::exists(kHaproxy)) CKJIT_SKIP("no " << kHaproxy << " (tools/setup.sh installs it)");
  serve_test::Server r1({}), r2({});
  REQUIRE_MESSAGE(r1.ok(), r1.log());
  REQUIRE_MESSAGE(r2.ok(), r2.log());
  const fs::path dir = fs::path(CKJIT_BUILD_DIR) / ("serve-haproxy-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const int front = free_port();
  REQUIRE(front > 0);
  std::ofstream(dir / "haproxy.cfg") << config(front, {r1.port(), r2.port()});
  serve_test::Process lb({kHaproxy, "-db", "-f", (dir / "haproxy.cfg").string()}, dir / "haproxy.log");
  const int timeout_s = 30 * serve_test::slow_factor();
  // Both replicas up behind the frontend.
  bool up = false;
  for (int i = 0; i < 200 && !up && lb.running(); ++i) {
    httplib::Client c("127.0.0.1", front);
    auto h = c.Get("/health");
    up = h && h->status == 200;
    if (!up) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  REQUIRE_MESSAGE(up, lb.log());
  std::this_thread::sleep_for(std::chrono::milliseconds(600));  // rise 2 x 250 ms for both

  // 24 requests from 3 threads; the first replica is killed (SIGKILL: no goodbye) after 8 answers.
  std::atomic<int> done{0}, ok{0}, clean{0}, bad{0};
  std::atomic<bool> killed{false};
  std::vector<std::thread> load;
  for (int t = 0; t < 3; ++t)
    load.emplace_back([&] {
      for (int i = 0; i < 8; ++i) {
        const Outcome o = one_request(front, timeout_s);
        (o == Outcome::ok ? ok : o == Outcome::clean_error ? clean : bad)++;
        if (++done == 8) {
          r1.process().stop(SIGKILL);
          killed = true;
        }
      }
    });
  for (auto& t : load) t.join();
  CHECK(killed);
  CHECK(bad == 0);
  CHECK(ok + clean == 24);
  CHECK(ok >= 16);  // only requests in flight on the killed replica may fail
  MESSAGE("under load: " << ok << " ok, " << clean << " clean errors");

  // HAProxy has marked the replica down (fall 2 x 250 ms): everything goes to the survivor.
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  int after = 0;
  for (int i = 0; i < 6; ++i) after += one_request(front, timeout_s) == Outcome::ok;
  CHECK(after == 6);
  auto m = r2.client()->Get("/metrics");
  REQUIRE(m);
  CHECK(m->body.find("ckjit_requests_total{path=\"/v1/chat/completions\",status=\"200\"}") != std::string::npos);
  lb.stop();
  CHECK(r2.process().stop() == 0);
  fs::remove_all(dir);
}

}  // TEST_SUITE
