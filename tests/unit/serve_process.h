#pragma once
// A real `ckjit serve` (or any) process for the end-to-end tests: started with its output in a log
// file, its port read from the "listening on" line (the server picks a free one with --port 0),
// /health waited for, and always stopped (SIGTERM, then SIGKILL after a grace time) by the
// destructor. The tiny model pair is synthesized once per build tree and shared by the tests.
#include "tests/unit/sanitizers.h"
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/unit/cli_run.h"
#include "tests/unit/fixture_cache.h"

namespace serve_test {

namespace fs = std::filesystem;

// Under ASan the server and its model are several times slower: generous, bounded timeouts.
inline int slow_factor() {
#if CKJIT_TEST_ASAN || CKJIT_TEST_TSAN
  return 6;
#else
  return 1;
#endif
}

struct TinyPair {
  std::string model, mmproj;
};

// Synthesized once per build of the test binary and of ckjit (tests/unit/fixture_cache.h).
inline const TinyPair& tiny_pair() {
  static TinyPair p = [] {
    const fs::path dir = fixture_cache::file("synth-tiny-seed3-" + fixture_cache::stamp_of(CKJIT_BINARY_PATH), [](const fs::path& d) {
      run_ckjit("synth -q --preset tiny --seed 3 --name t --out '" + d.string() + "'");
    });
    return TinyPair{(dir / "t-Q4_K_M.gguf").string(), (dir / "mmproj-t-f16.gguf").string()};
  }();
  return p;
}

class Process {
 public:
  Process(const std::vector<std::string>& argv, const fs::path& log) : log_(log) {
    pid_ = ::fork();
    if (pid_ == 0) {
      std::FILE* f = std::fopen(log.c_str(), "w");
      if (f) ::dup2(::fileno(f), 1), ::dup2(::fileno(f), 2);
      std::vector<char*> a;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ::execv(a[0], a.data());
      ::_exit(127);
    }
  }
  ~Process() { stop(); }
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  std::string log() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  bool running() {
    if (pid_ <= 0 || exited_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      exited_ = true, status_ = WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st);
      return false;
    }
    return true;
  }
  void signal(int sig) {
    if (pid_ > 0 && running()) ::kill(pid_, sig);
  }
  // Sends sig and waits up to grace_s; then SIGKILL. The exit status (negative: killed by a signal).
  int stop(int sig = SIGTERM, int grace_s = 20) {
    if (pid_ <= 0) return -1000;
    if (running()) {
      ::kill(pid_, sig);
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(grace_s);
      while (running() && std::chrono::steady_clock::now() < end) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (running()) {
        ::kill(pid_, SIGKILL);
        int st = 0;
        ::waitpid(pid_, &st, 0);
        exited_ = true, status_ = -SIGKILL;
      }
    }
    return status_;
  }

 private:
  fs::path log_;
  pid_t pid_ = -1;
  bool exited_ = false;
  int status_ = -1000;
};

// `ckjit serve` on the tiny pair with --port 0 and the given extra flags.
class Server {
 public:
  explicit Server(const std::vector<std::string>& extra, bool vision = true) {
    const TinyPair& p = tiny_pair();
    static int n = 0;
    log_path_ = fs::path(CKJIT_BUILD_DIR) / ("serve-test-" + std::to_string(::getpid()) + "-" + std::to_string(n++) + ".log");
    std::vector<std::string> argv = {CKJIT_BINARY_PATH, "serve", "-m", p.model, "--port", "0", "-t", "1", "--no-profile"};
    if (std::find(extra.begin(), extra.end(), "-c") == extra.end()) argv.insert(argv.end(), {"-c", "1024"});
    if (vision) argv.insert(argv.end(), {"--mmproj", p.mmproj});
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<Process>(argv, log_path_);
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(60 * slow_factor());
    while (port_ == 0 && proc_->running() && std::chrono::steady_clock::now() < end) {
      const std::string l = proc_->log();
      const size_t at = l.find("listening on http://127.0.0.1:");
      if (at != std::string::npos && l.find('\n', at) != std::string::npos) port_ = std::stoi(l.substr(at + 30));
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    while (port_ != 0 && std::chrono::steady_clock::now() < end) {
      httplib::Client c("127.0.0.1", port_);
      auto r = c.Get("/health");
      if (r && r->status == 200) {
        healthy_ = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  ~Server() { fs::remove(log_path_); }
  bool ok() const { return healthy_; }
  int port() const { return port_; }
  std::string log() const { return proc_->log(); }
  Process& process() { return *proc_; }
  std::unique_ptr<httplib::Client> client(int timeout_s = 60) const {
    auto c = std::make_unique<httplib::Client>("127.0.0.1", port_);
    c->set_read_timeout(timeout_s * slow_factor(), 0);
    c->set_write_timeout(timeout_s * slow_factor(), 0);
    c->set_connection_timeout(5, 0);
    return c;
  }

 private:
  fs::path log_path_;
  std::unique_ptr<Process> proc_;
  int port_ = 0;
  bool healthy_ = false;
};

}  // namespace serve_test
