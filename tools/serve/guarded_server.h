#pragma once
// httplib's Server with a guard on every connection. Debian's cpp-httplib 0.11.4 bounds only each
// single read, so a client that sends one byte every few seconds holds a worker for as long as it
// likes, and eight of them take a server offline. Here:
// - each request's headers and body must arrive within a deadline (--request-timeout), and its
//   headers within a byte and line cap;
// - a connection that finds no idle worker is looked at first by a triage thread: GET /health is
//   answered there at once (so a load balancer still sees the replica), anything else waits in a
//   bounded line for a worker, and past the line gets 503 with Retry-After;
// - an idle keep-alive connection gives its worker up as soon as another connection waits.
#include <httplib.h>

#include <chrono>
#include <cstddef>

namespace ckjit::serve {

struct ConnectionLimits {
  int workers = 8;                   // connections served at once
  int max_waiting = 8;               // connections waiting for a worker; past it 503
  int request_timeout_s = 30;        // one request's headers and body, from its first byte
  size_t max_header_bytes = 64 << 10;
  int max_header_lines = 128;
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(const ConnectionLimits& limits);

  // True on the thread serving a connection that found the line full: the routes answer it with
  // 503 (all but /health).
  static bool turned_away();
  // Ends the current connection after this answer (a refused body was never read, so the next
  // request cannot be found in the bytes).
  static void close_after_answer();

 private:
  bool process_and_close_socket(socket_t sock) override;
  void serve(socket_t sock, std::chrono::seconds deadline, bool keep_alive);
  bool wait_for_request(socket_t sock) const;
  void triage(socket_t sock);

  ConnectionLimits limits_;
  class Pool;
  Pool* pool_ = nullptr;  // owned by httplib (new_task_queue), alive while listening
};

}  // namespace ckjit::serve
