#include "tools/serve/guarded_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace ckjit::serve {

namespace {

using Clock = std::chrono::steady_clock;

enum class Role { Worker, Triage };
thread_local Role t_role = Role::Worker;
thread_local bool t_stale = false;       // a triage entry that waited too long: closed unanswered
thread_local bool t_turned_away = false;  // answered 503 (all but /health) by the triage thread
thread_local bool t_close = false;       // close after this answer

constexpr auto kTriageWait = std::chrono::milliseconds(500);  // for a new connection's first bytes
constexpr auto kTriageStale = std::chrono::seconds(2);        // a connection older than this in triage is dropped
constexpr int kTriageRequestS = 2;                             // the whole request answered in triage

bool wait_fd(socket_t fd, short events, int ms) {
  pollfd p{fd, events, 0};
  int r;
  do r = ::poll(&p, 1, std::max(ms, 0));
  while (r < 0 && errno == EINTR);
  return r > 0;
}

std::string address_of(const sockaddr_storage& a, int& port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (a.ss_family == AF_INET) {
    const auto& v4 = reinterpret_cast<const sockaddr_in&>(a);
    ::inet_ntop(AF_INET, &v4.sin_addr, text, sizeof text);
    port = ntohs(v4.sin_port);
  } else if (a.ss_family == AF_INET6) {
    const auto& v6 = reinterpret_cast<const sockaddr_in6&>(a);
    ::inet_ntop(AF_INET6, &v6.sin6_addr, text, sizeof text);
    port = ntohs(v6.sin6_port);
  }
  return text;
}

// A socket stream whose reads stop at the request's deadline and whose header bytes are counted.
// httplib reads headers a byte at a time: a small buffer keeps that off the system calls.
class GuardStream final : public httplib::Stream {
 public:
  GuardStream(socket_t sock, time_t read_s, time_t write_s, const ConnectionLimits& l)
      : sock_(sock), read_ms_(int(read_s * 1000)), write_ms_(int(write_s * 1000)), limits_(l) {}

  void begin_request(Clock::time_point deadline) {
    deadline_ = deadline;
    in_headers_ = true;
    header_bytes_ = 0, lines_ = 0, line_len_ = 0;
  }

  bool is_readable() const override { return begin_ < end_ || wait_fd(sock_, POLLIN, read_wait_ms()); }
  bool is_writable() const override { return wait_fd(sock_, POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (begin_ == end_) {
      if (!is_readable()) return -1;
      ssize_t n;
      do n = ::recv(sock_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      begin_ = 0, end_ = size_t(n);
    }
    size_t n = std::min(size, end_ - begin_);
    if (in_headers_ && !count_headers(n)) return -1;
    std::memcpy(ptr, buf_ + begin_, n);
    begin_ += n;
    return ssize_t(n);
  }

  using httplib::Stream::write;
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { name(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { name(::getsockname, ip, port); }
  socket_t socket() const override { return sock_; }

 private:
  int read_wait_ms() const {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    return left <= 0 ? -1 : int(std::min<int64_t>(left, read_ms_));
  }
  // Counts the header bytes about to be handed out (n of them, cut at the blank line that ends the
  // headers); false past a cap.
  bool count_headers(size_t& n) {
    for (size_t i = 0; i < n; ++i) {
      const char c = buf_[begin_ + i];
      if (++header_bytes_ > limits_.max_header_bytes) return false;
      if (c == '\n') {
        if (line_len_ == 0 && lines_ > 0) {
          in_headers_ = false;
          n = i + 1;
          return true;
        }
        if (++lines_ > limits_.max_header_lines) return false;
        line_len_ = 0;
      } else if (c != '\r') {
        ++line_len_;
      }
    }
    return true;
  }
  template <class F>
  void name(F get, std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t len = sizeof a;
    port = -1;
    if (get(sock_, reinterpret_cast<sockaddr*>(&a), &len) == 0) ip = address_of(a, port);
  }

  socket_t sock_;
  int read_ms_, write_ms_;
  const ConnectionLimits& limits_;
  Clock::time_point deadline_ = Clock::now();
  bool in_headers_ = true;
  size_t header_bytes_ = 0;
  int lines_ = 0;
  size_t line_len_ = 0;
  char buf_[4096];
  size_t begin_ = 0, end_ = 0;
};

// After an answer to a request whose body was not read: the client's unread bytes would turn the
// close into a reset that can destroy the answer before the client reads it, so they are read
// away first (briefly, boundedly).
void close_after_refusal(socket_t sock) {
  ::shutdown(sock, SHUT_WR);
  char sink[16384];
  const auto end = Clock::now() + std::chrono::milliseconds(500);
  for (size_t total = 0; total < (size_t(4) << 20) && Clock::now() < end;) {
    if (!wait_fd(sock, POLLIN, 100)) break;
    const ssize_t n = ::recv(sock, sink, sizeof sink, MSG_DONTWAIT);
    if (n <= 0) break;
    total += size_t(n);
  }
}

}  // namespace

// Workers for connections, a triage thread for those that find every worker busy, and the line
// between them. Entries are only taken in order; the line's length is bounded by the triage.
class GuardedServer::Pool final : public httplib::TaskQueue {
 public:
  Pool(int workers, int max_waiting) : max_waiting_(size_t(std::max(max_waiting, 0))) {
    for (int i = 0; i < std::max(workers, 1); ++i) workers_.emplace_back([this] { work(); });
    triage_thread_ = std::thread([this] { triage_loop(); });
  }

  // From httplib's accept loop: to an idle worker, else to the triage.
  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> l(mu_);
      if (size_t(idle_) > jobs_.size()) {
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
      triage_.emplace_back(Clock::now(), std::move(fn));
    }
    triage_cv_.notify_one();
  }

  // From the triage: a place in the line, or false when it is full.
  bool wait_in_line(std::function<void()> fn) {
    std::lock_guard<std::mutex> l(mu_);
    if (stop_workers_ || jobs_.size() >= max_waiting_ + size_t(idle_)) return false;
    jobs_.push_back(std::move(fn));
    cv_.notify_one();
    return true;
  }

  // Whether a connection waits for a worker (an idle keep-alive connection then gives its up).
  bool others_waiting() {
    std::lock_guard<std::mutex> l(mu_);
    return jobs_.size() > size_t(idle_) || !triage_.empty();
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_triage_ = true;
    }
    triage_cv_.notify_all();
    triage_thread_.join();  // first: what it hands on reaches the workers before they stop
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_workers_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

 private:
  void work() {
    t_role = Role::Worker;
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock<std::mutex> l(mu_);
        ++idle_;
        cv_.wait(l, [&] { return stop_workers_ || !jobs_.empty(); });
        --idle_;
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }
  void triage_loop() {
    t_role = Role::Triage;
    for (;;) {
      std::pair<Clock::time_point, std::function<void()>> e;
      {
        std::unique_lock<std::mutex> l(mu_);
        triage_cv_.wait(l, [&] { return stop_triage_ || !triage_.empty(); });
        if (triage_.empty()) return;
        e = std::move(triage_.front());
        triage_.pop_front();
      }
      t_stale = Clock::now() - e.first > kTriageStale;
      e.second();
      t_stale = false;
    }
  }

  std::mutex mu_;
  std::condition_variable cv_, triage_cv_;
  std::deque<std::function<void()>> jobs_;
  std::deque<std::pair<Clock::time_point, std::function<void()>>> triage_;
  size_t max_waiting_;
  int idle_ = 0;
  bool stop_triage_ = false, stop_workers_ = false;
  std::vector<std::thread> workers_;
  std::thread triage_thread_;
};

GuardedServer::GuardedServer(const ConnectionLimits& limits) : limits_(limits) {
  new_task_queue = [this] {
    pool_ = new Pool(limits_.workers, limits_.max_waiting);
    return pool_;
  };
}

bool GuardedServer::turned_away() { return t_turned_away; }
void GuardedServer::close_after_answer() { t_close = true; }

bool GuardedServer::process_and_close_socket(socket_t sock) {
  if (t_role == Role::Triage) {
    triage(sock);
    return true;
  }
  serve(sock, std::chrono::seconds(limits_.request_timeout_s), true);
  return true;
}

void GuardedServer::serve(socket_t sock, std::chrono::seconds timeout, bool keep_alive) {
  GuardStream strm(sock, read_timeout_sec_, write_timeout_sec_, limits_);
  for (size_t left = keep_alive ? std::max<size_t>(keep_alive_max_count_, 1) : 1, n = 0; left > 0; --left, ++n) {
    if (n > 0 && !wait_for_request(sock)) break;
    strm.begin_request(Clock::now() + timeout);
    t_close = false;
    bool closed = false;
    const bool ok = process_request(strm, left == 1, closed, nullptr);
    if (t_close) close_after_refusal(sock);
    if (!ok || closed || t_close) break;
  }
  t_close = false;
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

// Between two requests of a keep-alive connection: up to the keep-alive timeout, unless the server
// stops or another connection waits for this worker.
bool GuardedServer::wait_for_request(socket_t sock) const {
  const auto end = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
  while (Clock::now() < end) {
    if (wait_fd(sock, POLLIN, 100)) return true;
    if (svr_sock_ == INVALID_SOCKET || (pool_ && pool_->others_waiting())) return false;
  }
  return false;
}

// A connection that found every worker busy. Its first bytes are peeked at (not taken): GET
// /health is answered here; anything else takes a place in the line, and when the line is full
// gets its 503 here.
void GuardedServer::triage(socket_t sock) {
  bool health = false;
  if (!t_stale) {
    char head[16] = {};
    const auto end = Clock::now() + kTriageWait;
    ssize_t n = 0;
    // Until the request line's start is in, or the wait is over (a client that sends nothing
    // waits in the line like any other).
    while (n < ssize_t(sizeof head) && Clock::now() < end) {
      const int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(end - Clock::now()).count());
      if (!wait_fd(sock, POLLIN, ms)) break;
      const ssize_t got = ::recv(sock, head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
      if (got <= 0) break;
      if (got == n) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // still readable: no more yet
      n = got;
    }
    const std::string_view h(head, size_t(std::max<ssize_t>(n, 0)));
    health = (h.rfind("GET /health ", 0) == 0 || h.rfind("GET /health?", 0) == 0 || h.rfind("HEAD /health ", 0) == 0);
    if (!health && pool_->wait_in_line([this, sock] { process_and_close_socket(sock); })) return;
  }
  if (t_stale) {
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return;
  }
  t_turned_away = !health;
  serve(sock, std::chrono::seconds(kTriageRequestS), false);
  t_turned_away = false;
}

}  // namespace ckjit::serve
