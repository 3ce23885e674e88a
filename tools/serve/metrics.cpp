#include "tools/serve/metrics.h"

#include <sstream>

namespace ckjit::serve {


void Metrics::tokens(int64_t prompt, int64_t completion) {
  std::lock_guard<std::mutex> l(mu_);
  prompt_tokens_ += prompt, completion_tokens_ += completion;
}

void Metrics::phases(double encode_s, double prefill_s, double decode_s) {
  std::lock_guard<std::mutex> l(mu_);
  encode_s_ += encode_s, prefill_s_ += prefill_s, decode_s_ += decode_s;
}

namespace {
// Paths come from clients: only known routes are named, anything else is "other", grouped when
// it is counted (a client sending ever new paths must not grow the table).
const char* route_label(const std::string& p) {
  for (const char* known : {"/v1/chat/completions", "/v1/completions", "/v1/models", "/tokenize", "/detokenize", "/health", "/metrics"})
    if (p == known) return known;
  return "other";
}
}  // namespace

void Metrics::request(const std::string& path, int status) {
  std::lock_guard<std::mutex> l(mu_);
  ++requests_[{route_label(path), status}];
}

size_t Metrics::series() const {
  std::lock_guard<std::mutex> l(mu_);
  return requests_.size();
}

std::string Metrics::render(const Gauges& g) const {
  std::lock_guard<std::mutex> l(mu_);
  std::ostringstream o;
  o.precision(9);
  o << "# HELP ckjit_requests_total HTTP requests by route and status.\n# TYPE ckjit_requests_total counter\n";
  for (const auto& [k, n] : requests_) o << "ckjit_requests_total{path=\"" << k.first << "\",status=\"" << k.second << "\"} " << n << "\n";
  o << "# HELP ckjit_prompt_tokens_total Prompt rows prefilled (text tokens and image rows).\n# TYPE ckjit_prompt_tokens_total counter\n"
    << "ckjit_prompt_tokens_total " << prompt_tokens_ << "\n";
  o << "# HELP ckjit_completion_tokens_total Tokens generated.\n# TYPE ckjit_completion_tokens_total counter\n"
    << "ckjit_completion_tokens_total " << completion_tokens_ << "\n";
  o << "# HELP ckjit_phase_seconds_total Seconds spent per phase.\n# TYPE ckjit_phase_seconds_total counter\n"
    << "ckjit_phase_seconds_total{phase=\"encode\"} " << encode_s_ << "\n"
    << "ckjit_phase_seconds_total{phase=\"prefill\"} " << prefill_s_ << "\n"
    << "ckjit_phase_seconds_total{phase=\"decode\"} " << decode_s_ << "\n";
  o << "# HELP ckjit_queue_depth Requests waiting for a session.\n# TYPE ckjit_queue_depth gauge\nckjit_queue_depth " << g.queue_depth << "\n";
  o << "# HELP ckjit_sessions_busy Sessions serving a request.\n# TYPE ckjit_sessions_busy gauge\nckjit_sessions_busy " << g.busy_sessions << "\n";
  o << "# HELP ckjit_sessions Sessions (--parallel).\n# TYPE ckjit_sessions gauge\nckjit_sessions " << g.sessions << "\n";
  o << "# HELP ckjit_image_cache_hits_total Images whose encoded rows came from the cache.\n# TYPE ckjit_image_cache_hits_total counter\n"
    << "ckjit_image_cache_hits_total " << g.cache.hits << "\n";
  o << "# HELP ckjit_image_cache_misses_total Images encoded by the vision tower.\n# TYPE ckjit_image_cache_misses_total counter\n"
    << "ckjit_image_cache_misses_total " << g.cache.misses << "\n";
  o << "# HELP ckjit_image_cache_evictions_total Entries evicted (LRU).\n# TYPE ckjit_image_cache_evictions_total counter\n"
    << "ckjit_image_cache_evictions_total " << g.cache.evictions << "\n";
  o << "# HELP ckjit_image_cache_bytes Bytes of encoded rows held.\n# TYPE ckjit_image_cache_bytes gauge\n"
    << "ckjit_image_cache_bytes " << g.cache.bytes << "\n";
  o << "# HELP ckjit_image_cache_entries Images held.\n# TYPE ckjit_image_cache_entries gauge\n"
    << "ckjit_image_cache_entries " << g.cache.entries << "\n";
  return o.str();
}

}  // namespace ckjit::serve
