#include "tools/serve/guarded_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace ckjit::serve {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

enum class Role { Worker, Triage, Closing };
thread_local Role t_role = Role::Worker;
thread_local bool t_close = false;  // close after this answer
struct Waiting;
thread_local std::vector<Waiting>* t_triage = nullptr;  // the triage thread's connections
struct Lingering;
thread_local std::vector<Lingering>* t_lingering = nullptr;  // the triage thread's answered ones

constexpr auto kFirstBytes = milliseconds(500);  // a new connection's first bytes, in triage
constexpr auto kHealthRequest = milliseconds(1000);  // a whole /health request, in triage
constexpr size_t kMaxTriage = 256;  // connections watched at once; past it a 503 at once
constexpr size_t kPeek = 8192;      // the most of a /health request looked at
constexpr auto kLinger = milliseconds(2000);  // an answered connection's rest read away, in triage
constexpr size_t kMaxLingering = 512;       // past it, the old blocking 50 ms read-away
constexpr size_t kLingerBytes = size_t(4) << 20;  // the most read away from one connection

bool wait_fd(socket_t fd, short events, int ms) {
  pollfd p{fd, events, 0};
  int r;
  do r = ::poll(&p, 1, std::max(ms, 0));
  while (r < 0 && errno == EINTR);
  return r > 0;
}

int ms_until(Clock::time_point t) {
  const auto left = std::chrono::duration_cast<milliseconds>(t - Clock::now()).count();
  return left <= 0 ? 0 : int(std::min<int64_t>(left, 1 << 30));
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

// A socket stream whose reads stop at the request's deadline, at each read's timeout and when the
// server stops, and whose header bytes and lines are counted. httplib reads headers a byte at a
// time: a small buffer keeps that off the system calls.
class GuardStream final : public httplib::Stream {
 public:
  GuardStream(socket_t sock, time_t read_s, time_t write_s, const ConnectionLimits& l, const std::atomic<socket_t>& listening)
      : sock_(sock), read_ms_(int(read_s * 1000)), write_ms_(int(write_s * 1000)), limits_(l), listening_(listening) {}

  void begin_request(Clock::time_point deadline) {
    deadline_ = deadline;
    in_headers_ = true;
    header_bytes_ = 0, lines_ = 0, line_bytes_ = 0, line_starts_cr_ = false;
  }
  bool failed() const { return failed_; }      // a cap, the deadline or a stop ended a read
  bool buffered() const { return begin_ < end_; }

  bool is_readable() const override {
    if (Clock::now() >= deadline_) return fail();
    if (begin_ < end_) return true;
    const auto read_end = Clock::now() + milliseconds(read_ms_);
    for (;;) {
      if (listening_ == INVALID_SOCKET) return fail();
      const int left = std::min(ms_until(deadline_), ms_until(read_end));
      if (left <= 0) return fail();
      if (wait_fd(sock_, POLLIN, std::min(left, 100))) return true;
    }
  }
  bool is_writable() const override { return wait_fd(sock_, POLLOUT, write_ms_); }

  ssize_t read(char* ptr, size_t size) override {
    if (!is_readable()) return -1;
    if (begin_ == end_) {
      ssize_t n;
      do n = ::recv(sock_, buf_, sizeof buf_, 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      begin_ = 0, end_ = size_t(n);
    }
    size_t n = std::min(size, end_ - begin_);
    if (in_headers_ && !count_headers(n)) {
      fail();
      return -1;
    }
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
  bool fail() const {
    failed_ = true;
    return false;
  }
  // Counts the header bytes about to be handed out (n of them, cut after the line "\r\n" that
  // ends the headers, as httplib reads them); false past a cap.
  bool count_headers(size_t& n) {
    for (size_t i = 0; i < n; ++i) {
      const char c = buf_[begin_ + i];
      if (++header_bytes_ > limits_.max_header_bytes) return false;
      if (c == '\n') {
        if (lines_ > 0 && line_bytes_ == 1 && line_starts_cr_) {
          in_headers_ = false;
          n = i + 1;
          return true;
        }
        if (++lines_ > limits_.max_header_lines) return false;
        line_bytes_ = 0;
        continue;
      }
      if (line_bytes_++ == 0) line_starts_cr_ = c == '\r';
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
  const std::atomic<socket_t>& listening_;
  Clock::time_point deadline_ = Clock::now();
  mutable bool failed_ = false;
  bool in_headers_ = true;
  size_t header_bytes_ = 0;
  int lines_ = 0;
  size_t line_bytes_ = 0;
  bool line_starts_cr_ = false;
  char buf_[4096];
  size_t begin_ = 0, end_ = 0;
};

// After an answer to a request whose body was not read: the client's unread bytes would turn the
// close into a reset that can destroy the answer before the client reads it, so they are read
// away first (briefly, boundedly), then the socket is closed.
void close_gently(socket_t sock, milliseconds for_at_most) {
  ::shutdown(sock, SHUT_WR);
  char sink[16384];
  const auto end = Clock::now() + for_at_most;
  for (size_t total = 0; total < (size_t(4) << 20);) {
    if (!wait_fd(sock, POLLIN, std::min(ms_until(end), 100))) break;
    const ssize_t n = ::recv(sock, sink, sizeof sink, MSG_DONTWAIT);
    if (n <= 0) break;
    total += size_t(n);
  }
  ::close(sock);
}

// A connection the triage answered (503, /health): its write side shut, what the client still sends
// read away until it closes or the time is up. In the triage's poll, not a blocking wait: under
// load a client's body can come well after its head, and a client still sending when the socket
// closes gets a broken pipe on its send and never reads the answer.
struct Lingering {
  socket_t fd;
  Clock::time_point until;
  size_t read = 0;
};

void linger_close(socket_t sock) {
  if (!t_lingering || t_lingering->size() >= kMaxLingering) return close_gently(sock, milliseconds(50));
  ::shutdown(sock, SHUT_WR);
  t_lingering->push_back({sock, Clock::now() + kLinger});
}

// Reads what a lingering connection has; false once it is closed (EOF, error, cap or time).
bool linger_read(Lingering& l) {
  char sink[16384];
  for (;;) {
    const ssize_t n = ::recv(l.fd, sink, sizeof sink, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN && Clock::now() < l.until) return true;
    if (n > 0 && (l.read += size_t(n)) < kLingerBytes) continue;
    ::close(l.fd);
    return false;
  }
}

// A whole answer written at once, without waiting long: the triage never blocks on one client.
void send_answer(socket_t sock, int status, const char* reason, const std::string& body, bool retry) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\nContent-Type: application/json\r\nContent-Length: " +
                    std::to_string(body.size()) + "\r\nConnection: close\r\n" + (retry ? "Retry-After: 1\r\n" : "") + "\r\n" + body;
  const auto end = Clock::now() + milliseconds(200);
  for (size_t at = 0; at < out.size();) {
    const ssize_t n = ::send(sock, out.data() + at, out.size() - at, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) at += size_t(n);
    else if (n < 0 && (errno == EAGAIN || errno == EINTR) && Clock::now() < end) wait_fd(sock, POLLOUT, 20);
    else break;
  }
}

// The request line's path ("" until it is in).
std::string path_of(std::string_view head) {
  const size_t sp = head.find(' ');
  if (sp == std::string_view::npos) return "";
  const size_t end = head.find_first_of(" ?\r\n", sp + 1);
  return end == std::string_view::npos ? "" : std::string(head.substr(sp + 1, end - sp - 1));
}

// What the first bytes say: a /health request, not one, or too few bytes yet.
enum class Kind { Health, Other, Unknown };
Kind kind_of(std::string_view head) {
  for (std::string_view h : {std::string_view("GET /health"), std::string_view("HEAD /health")}) {
    if (head.size() <= h.size()) {
      if (h.substr(0, head.size()) == head) return Kind::Unknown;
      continue;
    }
    if (head.substr(0, h.size()) == h && (head[h.size()] == ' ' || head[h.size()] == '?')) return Kind::Health;
  }
  return Kind::Other;
}

// A connection the triage watches.
struct Waiting {
  socket_t fd;
  Clock::time_point until;  // for its first bytes, then for its whole /health request
  bool started = false;     // bytes came
  bool idle = false;        // undecided bytes peeked: looked at again after a pause, not polled
};

}  // namespace

// Workers for connections, a triage thread for those that find every worker busy, and the line
// between them.
class GuardedServer::Pool final : public httplib::TaskQueue {
 public:
  Pool(GuardedServer& server, int workers, int max_waiting) : server_(server), max_waiting_(size_t(std::max(max_waiting, 0))) {
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
      triage_.push_back(std::move(fn));
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
    return jobs_.size() > size_t(idle_) || !triage_.empty() || triage_size_ > 0;
  }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_triage_ = true;
    }
    triage_cv_.notify_all();
    triage_thread_.join();  // first: what it hands on reaches the workers, which close it
    {
      std::lock_guard<std::mutex> l(mu_);
      stop_workers_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : workers_) t.join();
  }

 private:
  void work() {
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
        t_role = stop_workers_ ? Role::Closing : Role::Worker;  // stopping: what still waits is closed, not served
      }
      fn();
    }
  }

  void triage_loop();
  void triage_look(Waiting& w, std::vector<Waiting>& keep);
  void hand_on(socket_t fd, const std::string& path);

  GuardedServer& server_;
  std::mutex mu_;
  std::condition_variable cv_, triage_cv_;
  std::deque<std::function<void()>> jobs_, triage_;
  size_t max_waiting_;
  size_t triage_size_ = 0;  // connections the triage watches
  int idle_ = 0;
  bool stop_triage_ = false, stop_workers_ = false;
  std::vector<std::thread> workers_;
  std::thread triage_thread_;
};

// The triage: every connection it was given, watched with one poll; nothing is read until it is
// decided, and no client can hold the thread.
void GuardedServer::Pool::triage_loop() {
  t_role = Role::Triage;
  std::vector<Waiting> watched;
  std::vector<Lingering> lingering;
  t_triage = &watched;
  t_lingering = &lingering;
  for (;;) {
    std::deque<std::function<void()>> fresh;
    {
      std::unique_lock<std::mutex> l(mu_);
      triage_size_ = watched.size();
      if (watched.empty() && lingering.empty()) triage_cv_.wait(l, [&] { return stop_triage_ || !triage_.empty(); });
      if (stop_triage_) break;
      fresh.swap(triage_);
    }
    for (auto& fn : fresh) fn();  // each lands in `watched` (process_and_close_socket, role Triage)
    std::vector<pollfd> fds;
    Clock::time_point next = Clock::now() + milliseconds(20);
    for (const Waiting& w : watched) {
      next = std::min(next, w.until);
      if (!w.idle) fds.push_back({w.fd, POLLIN, 0});
    }
    const size_t first_lingering = fds.size();
    for (const Lingering& g : lingering) {
      next = std::min(next, g.until);
      fds.push_back({g.fd, POLLIN, 0});
    }
    const bool any_idle = std::any_of(watched.begin(), watched.end(), [](const Waiting& w) { return w.idle; });
    int r;
    do r = ::poll(fds.data(), fds.size(), any_idle ? std::min(20, ms_until(next)) : ms_until(next));
    while (r < 0 && errno == EINTR);
    std::vector<Lingering> still;  // first: those answered below join the list after this look
    for (size_t i = 0; i < lingering.size(); ++i) {
      Lingering& g = lingering[i];
      if (fds[first_lingering + i].revents == 0 && Clock::now() < g.until) still.push_back(g);
      else if (linger_read(g)) still.push_back(g);
    }
    lingering.swap(still);
    std::vector<Waiting> keep;
    for (Waiting& w : watched) {
      const auto end = fds.begin() + std::ptrdiff_t(first_lingering);
      const auto it = std::find_if(fds.begin(), end, [&](const pollfd& p) { return p.fd == w.fd; });
      const bool ready = w.idle || (it != end && it->revents != 0);
      if (Clock::now() >= w.until) {  // first: a connection that stays undecided must not stay for ever
        if (w.started) ::close(w.fd);  // a /health request that did not finish in time
        else hand_on(w.fd, "");         // no bytes yet: a place in line like any other request
      } else if (ready) {
        triage_look(w, keep);
      } else {
        keep.push_back(w);
      }
    }
    watched.swap(keep);
  }
  for (const Waiting& w : watched) ::close(w.fd);
  for (const Lingering& g : lingering) ::close(g.fd);
  t_triage = nullptr;
  t_lingering = nullptr;
}

void GuardedServer::Pool::triage_look(Waiting& w, std::vector<Waiting>& keep) {
  char head[kPeek];
  const ssize_t n = ::recv(w.fd, head, sizeof head, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
    w.idle = false;
    keep.push_back(w);
    return;
  }
  if (n <= 0) {
    ::close(w.fd);  // gone
    return;
  }
  const std::string_view h(head, size_t(n));
  const Kind kind = kind_of(h);
  if (kind == Kind::Other) return hand_on(w.fd, path_of(h));
  if (!w.started) w.started = true, w.until = Clock::now() + kHealthRequest;
  const size_t end = h.find("\r\n\r\n");
  if (kind == Kind::Health && end != std::string_view::npos &&
      std::count(h.begin(), h.begin() + std::ptrdiff_t(end), '\n') >= server_.limits_.max_header_lines) {
    ::close(w.fd);  // the same line cap as a worker's
    return;
  }
  if (kind == Kind::Health && end != std::string_view::npos) {
    char sink[kPeek];
    const ssize_t got = ::recv(w.fd, sink, end + 4, MSG_DONTWAIT);  // the request, taken now
    (void)got;
    auto [status, body] = server_.limits_.health ? server_.limits_.health() : std::pair<int, std::string>{200, "{\"status\":\"ok\"}"};
    if (h.rfind("HEAD", 0) == 0) body.clear();
    send_answer(w.fd, status, status == 200 ? "OK" : "Service Unavailable", body, false);
    if (server_.limits_.answered) server_.limits_.answered("/health", status);
    linger_close(w.fd);
    return;
  }
  if (size_t(n) == sizeof head) {
    ::close(w.fd);  // a /health request with headers past the peek: no such client is honest
    return;
  }
  w.idle = true;  // more bytes to come: looked at again after a pause
  keep.push_back(w);
}

// A connection that is not a /health request: a place in the line, else a 503 at once.
void GuardedServer::Pool::hand_on(socket_t fd, const std::string& path) {
  GuardedServer* server = &server_;
  if (wait_in_line([server, fd] { server->process_and_close_socket(fd); })) return;
  send_answer(fd, 503, "Service Unavailable", server_.limits_.busy_body, true);
  if (server_.limits_.answered) server_.limits_.answered(path, 503);
  linger_close(fd);
}

GuardedServer::GuardedServer(ConnectionLimits limits) : limits_(std::move(limits)) {
  new_task_queue = [this] {
    pool_ = new Pool(*this, limits_.workers, limits_.max_waiting);
    return pool_;
  };
}

void GuardedServer::close_after_answer() { t_close = true; }

void GuardedServer::widen_backlog() {
  if (svr_sock_ != INVALID_SOCKET) ::listen(svr_sock_, SOMAXCONN);  // listen again: Linux takes the new backlog
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  switch (t_role) {
    case Role::Triage:
      if (t_triage && t_triage->size() < kMaxTriage) {
        t_triage->push_back({sock, Clock::now() + kFirstBytes});
      } else {
        send_answer(sock, 503, "Service Unavailable", limits_.busy_body, true);
        linger_close(sock);
      }
      return true;
    case Role::Closing:
      ::close(sock);
      return true;
    case Role::Worker:
      serve(sock);
      return true;
  }
  return true;
}

void GuardedServer::serve(socket_t sock) {
  GuardStream strm(sock, read_timeout_sec_, write_timeout_sec_, limits_, svr_sock_);
  bool gentle = false;
  for (size_t left = std::max<size_t>(keep_alive_max_count_, 1), n = 0; left > 0; --left, ++n) {
    if (n > 0) {
      // Between two requests: up to the keep-alive timeout, unless the server stops or another
      // connection waits for this worker.
      const auto end = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
      bool next = strm.buffered();
      while (!next && Clock::now() < end && svr_sock_ != INVALID_SOCKET && !(pool_ && pool_->others_waiting()))
        next = wait_fd(sock, POLLIN, 100);
      if (!next) break;
    }
    strm.begin_request(Clock::now() + std::chrono::seconds(limits_.request_timeout_s));
    t_close = false;
    bool closed = false;
    const bool ok = process_request(strm, left == 1, closed, nullptr);
    if (strm.failed()) break;  // a slow or oversized request: closed at once
    if (t_close) {
      gentle = true;
      break;
    }
    if (!ok || closed) break;
  }
  t_close = false;
  int unread = 0;  // pipelined requests past the keep-alive count: read away, or the close resets
  if (!strm.failed() && (gentle || strm.buffered() || (::ioctl(sock, FIONREAD, &unread) == 0 && unread > 0)))
    return close_gently(sock, milliseconds(500));
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
}

}  // namespace ckjit::serve
