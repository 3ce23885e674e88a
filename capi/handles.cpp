#include "capi/handles.h"

#include <unordered_map>

namespace ckjit::capi {

namespace {
std::mutex g_mu;
std::unordered_map<const void*, Kind>& live() {
  static auto* s = new std::unordered_map<const void*, Kind>;  // never destroyed: calls may come during exit
  return *s;
}
}  // namespace

std::string& thread_last_error() {
  thread_local std::string message;
  return message;
}

const char* ErrorSlot::get() const {
  std::lock_guard<std::mutex> l(mu_);
  copy_ = msg_;
  return copy_.c_str();
}

void register_handle(const void* h, Kind k) {
  std::lock_guard<std::mutex> l(g_mu);
  live()[h] = k;
}

void unregister_handle(const void* h) {
  std::lock_guard<std::mutex> l(g_mu);
  live().erase(h);
}

bool take_handle(const void* h, Kind k) {
  std::lock_guard<std::mutex> l(g_mu);
  auto it = live().find(h);
  if (it == live().end() || it->second != k) return false;
  live().erase(it);
  return true;
}

bool live_handle(const void* h, Kind k) {
  std::lock_guard<std::mutex> l(g_mu);
  auto it = live().find(h);
  return it != live().end() && it->second == k;
}

}  // namespace ckjit::capi
