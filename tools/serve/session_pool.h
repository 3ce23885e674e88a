#pragma once
// N sessions on one model. Requests wait in one FIFO line for a free session (first come, first
// served: a later request never overtakes a waiting one); a waiter whose client has gone leaves
// the line. A Lease gives its session back when it ends, its KV cache kept for prefix reuse
// (cache_prompt): a request takes the free session whose last prompt shares the longest start
// with its own (as llama-server picks a slot), so a shared system prompt or page image is found.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "include/ckjit.h"

namespace ckjit::serve {

class SessionPool;

class Lease {
 public:
  Lease() = default;
  Lease(SessionPool* pool, ckjit_session* s) : pool_(pool), s_(s) {}
  Lease(Lease&& o) noexcept : pool_(o.pool_), s_(o.s_) { o.pool_ = nullptr, o.s_ = nullptr; }
  Lease& operator=(Lease&& o) noexcept;
  ~Lease();
  ckjit_session* get() const { return s_; }
  // What the session holds now (a prompt's signature: image keys and text), for later acquires.
  void remember(std::string signature);
  std::string remembered() const;  // what the last remember() put there
  explicit operator bool() const { return s_ != nullptr; }

 private:
  SessionPool* pool_ = nullptr;
  ckjit_session* s_ = nullptr;
};

class SessionPool {
 public:
  // Throws std::runtime_error when a session cannot be made.
  SessionPool(ckjit_model* model, int n, const ckjit_session_params& params);
  ~SessionPool();
  SessionPool(const SessionPool&) = delete;
  SessionPool& operator=(const SessionPool&) = delete;

  // Waits in line for a session; gives up (an empty Lease) when gone() turns true (checked every
  // poll_ms) or when the pool is shut down.
  // signature: this request's prompt (image keys and text); the free session with the longest
  // common start with it is taken (ties: the one freed last).
  Lease acquire(const std::function<bool()>& gone, const std::string& signature = "", int poll_ms = 100);
  void shutdown();  // wakes every waiter with an empty Lease

  int size() const { return int(all_.size()); }
  int busy() const;
  int queued() const;

 private:
  friend class Lease;
  void release(ckjit_session* s);

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::vector<ckjit_session*> all_, free_;
  std::vector<std::string> signature_;  // per session of all_
  std::deque<uint64_t> line_;  // tickets of the waiters, in arrival order
  uint64_t next_ticket_ = 0;
  bool down_ = false;
};

}  // namespace ckjit::serve
