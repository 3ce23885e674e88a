#pragma once
// The server's counters, rendered as Prometheus text exposition (GET /metrics).
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "tools/serve/image_cache.h"

namespace ckjit::serve {

class Metrics {
 public:
  void request(const std::string& path, int status);  // counted under the route's name, or "other"
  size_t series() const;                               // (route, status) pairs counted so far
  void tokens(int64_t prompt, int64_t completion);
  void phases(double encode_s, double prefill_s, double decode_s);

  // Gauges are read at render time from their owners.
  struct Gauges {
    int queue_depth = 0, busy_sessions = 0, sessions = 0;
    ImageCache::Stats cache;
  };
  std::string render(const Gauges& g) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;  // (route label, status) -> count
  int64_t prompt_tokens_ = 0, completion_tokens_ = 0;
  double encode_s_ = 0, prefill_s_ = 0, decode_s_ = 0;
};

}  // namespace ckjit::serve
