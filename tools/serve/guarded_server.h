#pragma once
// httplib's Server with a guard on every connection. Debian's cpp-httplib 0.11.4 bounds only each
// single read, so a client that sends one byte every few seconds holds a worker for as long as it
// likes, and eight of them take a server offline. Here:
// - each request's headers and body must arrive within a deadline (--request-timeout), and its
//   headers within a byte and line cap; a connection past either is closed;
// - a connection that finds no idle worker goes to a triage thread, which watches all such
//   connections at once (poll) and reads nothing it does not need: GET or HEAD /health is answered
//   there, anything else takes a place in a bounded line for a worker or, past it, gets 503 with
//   Retry-After;
// - an idle keep-alive connection gives its worker up as soon as another connection waits;
// - on stop, queued connections are closed and slow reads end within a tenth of a second.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

namespace ckjit::serve {

struct ConnectionLimits {
  int workers = 8;                   // connections served at once
  int max_waiting = 8;               // connections waiting for a worker; past it 503
  int request_timeout_s = 30;        // one request's headers and body, from its first byte
  size_t max_header_bytes = 64 << 10;
  int max_header_lines = 128;
  // What the triage answers without a worker: /health's status and JSON body, the 503's JSON body,
  // and a count for each answer (path, status).
  std::function<std::pair<int, std::string>()> health;
  std::string busy_body;
  std::function<void(const std::string&, int)> answered;
};

class GuardedServer : public httplib::Server {
 public:
  explicit GuardedServer(ConnectionLimits limits);

  // Ends the current connection after this answer (a refused body was never read, so the next
  // request cannot be found in the bytes).
  static void close_after_answer();

  // After bind_to_port: the listening socket's backlog raised to the system's cap. Debian's
  // httplib listens with a backlog of 5, so a burst of connections while the accept loop is busy
  // waits on SYN retries (a second or more) or, on Linux, can end in a reset.
  void widen_backlog();

 private:
  class Pool;
  class Triage;
  bool process_and_close_socket(socket_t sock) override;
  void serve(socket_t sock);

  ConnectionLimits limits_;
  Pool* pool_ = nullptr;  // owned by httplib (new_task_queue), alive while listening
  std::atomic<bool> stopping_{false};
};

}  // namespace ckjit::serve
