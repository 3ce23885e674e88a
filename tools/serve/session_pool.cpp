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

void Lease::remember(std::string signature) {
  if (!pool_ || !s_) return;
  std::lock_guard<std::mutex> l(pool_->mu_);
  const auto it = std::find(pool_->all_.begin(), pool_->all_.end(), s_);
  pool_->signature_[size_t(it - pool_->all_.begin())] = std::move(signature);
}

std::string Lease::remembered() const {
  if (!pool_ || !s_) return "";
  std::lock_guard<std::mutex> l(pool_->mu_);
  const auto it = std::find(pool_->all_.begin(), pool_->all_.end(), s_);
  return pool_->signature_[size_t(it - pool_->all_.begin())];
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
  signature_.resize(all_.size());
}

SessionPool::~SessionPool() {
  for (ckjit_session* s : all_) ckjit_session_free(s);
}

Lease SessionPool::acquire(const std::function<bool()>& gone, const std::string& signature, int poll_ms) {
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
      size_t best = free_.size() - 1, best_len = 0;
      for (size_t i = free_.size(); i-- > 0;) {
        const std::string& had = signature_[size_t(std::find(all_.begin(), all_.end(), free_[i]) - all_.begin())];
        const size_t len = size_t(std::mismatch(had.begin(), had.end(), signature.begin(), signature.end()).first - had.begin());
        if (len > best_len) best = i, best_len = len;
      }
      ckjit_session* s = free_[best];
      free_.erase(free_.begin() + std::ptrdiff_t(best));
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
