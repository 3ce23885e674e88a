// The scale-out recipe (tools/serve/haproxy.cfg.in): HAProxy with health checks in front of two
// `ckjit serve` replicas on 127.0.0.1. A bounded load from a few threads; one replica is killed
// mid-load; every request either succeeds or fails cleanly (a 5xx from HAProxy or a closed
// connection, within the client's timeout, never a hang), and every request after HAProxy has
// seen the replica go succeeds on the survivor. No sleeps and no port picked then released: the
// frontend is a socket this test binds and hands down (fd@N), and HAProxy's own server states
// (its stats socket) say when both replicas are up and when the killed one is down.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <memory>
#include <mutex>

#include "tests/unit/serve_process.h"
#include "tests/unit/skip.h"

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

const char* kHaproxy = "/usr/sbin/haproxy";

// A listening socket on 127.0.0.1, any port, inherited by HAProxy (no CLOEXEC): its frontend.
struct Listener {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  int port = 0;
  Listener() {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (fd >= 0 && ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::listen(fd, 64) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &n) == 0)
      port = ntohs(a.sin_port);
  }
  ~Listener() { if (fd >= 0) ::close(fd); }
};

// HAProxy's state of each server of backend `replicas` ("UP", "DOWN", "UP 1/2", ...), from `show
// stat` on its stats socket; empty while the socket is not there yet.
std::map<std::string, std::string> server_states(const fs::path& sock) {
  std::map<std::string, std::string> out;
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", sock.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::write(fd, "show stat\n", 10) == 10) {
    std::string csv;
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) csv.append(buf, size_t(n));
    std::istringstream in(csv);
    for (std::string line; std::getline(in, line);) {
      std::vector<std::string> f;
      std::istringstream fields(line);
      for (std::string x; std::getline(fields, x, ',');) f.push_back(x);
      if (f.size() > 17 && f[0] == "replicas") out[f[1]] = f[17];  // pxname, svname, ..., status
    }
  }
  ::close(fd);
  return out;
}

// Polls HAProxy's states until `want` holds (at most timeout_s); false if it never did or HAProxy died.
template <class Want>
bool wait_states(serve_test::Process& lb, const fs::path& sock, int timeout_s, Want want) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (; lb.running() && std::chrono::steady_clock::now() < end; std::this_thread::sleep_for(std::chrono::milliseconds(20)))
    if (want(server_states(sock))) return true;
  return false;
}

// The configuration as the recipe makes it: tools/serve/haproxy_config.sh FRONTEND REPLICA...
std::string config(const std::string& front, const std::vector<int>& replicas) {
  std::string cmd = "bash " + (fs::path(CKJIT_SOURCE_DIR) / "tools" / "serve" / "haproxy_config.sh").string() + " " + front;
  for (int r : replicas) cmd += " 127.0.0.1:" + std::to_string(r);
  std::unique_ptr<FILE, int (*)(FILE*)> p(::popen(cmd.c_str(), "r"), &::pclose);
  REQUIRE(p);
  std::string cfg;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p.get())) > 0;) cfg.append(buf, n);
  REQUIRE(cfg.find("@FRONTEND@") == std::string::npos);
  REQUIRE(cfg.find("@SERVERS@") == std::string::npos);
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
  const Listener front_socket;
  REQUIRE(front_socket.port > 0);
  const int front = front_socket.port;
  // The recipe's configuration, and a stats socket for this test to read the server states (a
  // short path: a unix socket's name is at most 107 bytes).
  std::string cfg = config("fd@" + std::to_string(front_socket.fd), {r1.port(), r2.port()});
  const fs::path sock = fs::temp_directory_path() / ("ckjit-haproxy-" + std::to_string(::getpid()) + ".sock");
  fs::remove(sock);
  const auto g = cfg.find("global\n");
  REQUIRE(g != std::string::npos);
  cfg.insert(g + 7, "  stats socket " + sock.string() + " level user\n");
  std::ofstream(dir / "haproxy.cfg") << cfg;
  serve_test::Process lb({kHaproxy, "-db", "-f", (dir / "haproxy.cfg").string()}, dir / "haproxy.log");
  const int timeout_s = 30 * serve_test::slow_factor();
  // Both replicas up behind the frontend, by HAProxy's own account.
  REQUIRE_MESSAGE(wait_states(lb, sock, timeout_s, [](const auto& st) {
                    return st.size() >= 2 && st.count("r1") && st.at("r1") == "UP" && st.count("r2") && st.at("r2") == "UP";
                  }),
                  lb.log());

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

  // Once HAProxy has marked the replica down (fall 2 x 250 ms), everything goes to the survivor.
  REQUIRE_MESSAGE(wait_states(lb, sock, timeout_s, [](const auto& st) {
                    return st.count("r1") && st.at("r1") == "DOWN" && st.count("r2") && st.at("r2") == "UP";
                  }),
                  lb.log());
  int after = 0;
  for (int i = 0; i < 6; ++i) after += one_request(front, timeout_s) == Outcome::ok;
  CHECK(after == 6);
  auto m = r2.client()->Get("/metrics");
  REQUIRE(m);
  CHECK(m->body.find("ckjit_requests_total{path=\"/v1/chat/completions\",status=\"200\"}") != std::string::npos);
  lb.stop();
  CHECK(r2.process().stop() == 0);
  fs::remove_all(dir);
  fs::remove(sock);
}

}  // TEST_SUITE
