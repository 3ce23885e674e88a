#include "tools/serve/session_pool.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <string>

namespace ckjit::serve {

Lease& Lease::operator=(Lease&& o) noexcept {
  if (this != &o) {
    if (pool_ && s_) pool_->release(s_);
    pool_ = o.pool_, s_ = o.s_;
    o.pool_ = nullptr, o.s_ = nullptr;
  }
  return *this;
}

Lease::~Lease() {
  if (pool_ && s_) pool_->release(s_);
}

SessionPool::SessionPool(ckjit_model* model, int n, const ckjit_session_params& params) {
  for (int i = 0; i < n; ++i) {
    ckjit_session* s = nullptr;
    if (ckjit_session_new(model, &params, &s) != CKJIT_OK) {
      const std::string msg = ckjit_last_error();
      for (ckjit_session* x : all_) ckjit_session_free(x);
      throw std::runtime_error("session " + std::to_string(i + 1) + " of " + std::to_string(n) + ": " + msg);
    }
    all_.push_back(s);
  }
  free_ = all_;
}

SessionPool::~SessionPool() {
  for (ckjit_session* s : all_) ckjit_session_free(s);
}

Lease SessionPool::acquire(const std::function<bool()>& gone, int poll_ms) {
  std::unique_lock<std::mutex> l(mu_);
  const uint64_t ticket = next_ticket_++;
  line_.push_back(ticket);
  auto leave = [&] { line_.erase(std::find(line_.begin(), line_.end(), ticket)); cv_.notify_all(); };
  while (true) {
    if (down_) {
      leave();
      return {};
    }
    if (line_.front() == ticket && !free_.empty()) {
      ckjit_session* s = free_.back();
      free_.pop_back();
      line_.pop_front();
      cv_.notify_all();  // the next in line may take another free session
      return Lease(this, s);
    }
    cv_.wait_for(l, std::chrono::milliseconds(poll_ms));
    if (gone && gone()) {
      leave();
      return {};
    }
  }
}

void SessionPool::release(ckjit_session* s) {
  ckjit_session_reset(s);  // the next request starts from an empty KV cache
  std::lock_guard<std::mutex> l(mu_);
  free_.push_back(s);
  cv_.notify_all();
}

void SessionPool::shutdown() {
  std::lock_guard<std::mutex> l(mu_);
  down_ = true;
  cv_.notify_all();
}

int SessionPool::busy() const {
  std::lock_guard<std::mutex> l(mu_);
  return int(all_.size() - free_.size());
}

int SessionPool::queued() const {
  std::lock_guard<std::mutex> l(mu_);
  return int(line_.size());
}

}  // namespace ckjit::serve
