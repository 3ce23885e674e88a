#pragma once
// What every route shares: the options, the model, its sessions, the image cache and the metrics.
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "include/ckjit.h"
#include "tools/serve/image_cache.h"
#include "tools/serve/metrics.h"
#include "tools/serve/openai_request.h"
#include "tools/serve/session_pool.h"

namespace ckjit::serve {

struct ServerOptions {
  std::string model, mmproj, alias;
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (printed on the "listening" line)
  int parallel = 1;
  int threads = 0;  // per session; 0: the machine's CPU budget
  int n_ctx = 4096, n_batch = 512;
  int image_min_tokens = 0, image_max_tokens = 0;  // 0: the library's defaults (8, 4096)
  double max_body_mb = 32;
  double image_cache_mb = 256;
  int http_threads = 0;  // 0: enough for the sessions and a queue
  int max_queue = 0;     // requests waiting for a session beyond which new ones get 503 (0: 4 x parallel)
  int timeout_s = 600;   // socket read / write timeout (llama-server's default)
  int request_timeout_s = 30;  // one request's headers and body, from its first byte
  int drain_s = 8;       // SIGTERM / first SIGINT: how long requests in flight may take to finish (0: cut at once);
                         // below Docker's 10 s stop timeout
  bool use_profile = true;
  bool no_cache_sharing = false;  // prompt rows and encoded images reused only within one 'user'

  std::string max_isa;
  std::string vision_precision = "f32";  // ckjit_model_params.vision_precision
  std::string api_key;      // non-empty: Bearer authentication on every route but /health
  bool api_key_given = false;  // --api-key was given (an empty one is an error, not "no auth")
  bool no_api_key_ok = false;  // a non-loopback --host without a key is refused unless this is set
  std::vector<std::string> hosts;  // Host names answered ("*": any); empty: loopback names on a loopback --host
  std::string cors_origin;  // non-empty: CORS headers for this origin ("*": any)
  RequestLimits limits;
};

struct ServerState {
  ServerOptions opt;
  std::string model_name;  // what /v1/models lists and "model" may name
  ckjit_model* model = nullptr;
  std::unique_ptr<SessionPool> pool;
  // --parallel > 1: the sessions' generations run together in one batch (continuous batching).
  ckjit_batcher* batcher = nullptr;
  std::unique_ptr<ImageCache> cache;
  Metrics metrics;
  std::atomic<bool> stopping{false};  // generations stop after their current token, queued requests leave
  std::atomic<bool> draining{false};  // new requests get 503, those in flight finish
  std::atomic<int> in_flight{0};      // generation requests accepted and not yet answered in full
  int n_ctx = 4096;

  bool accepts_model(const std::string& name) const;
};

// Counts a generation request in flight from its start until its answer (or stream) is done.
class InFlight {
 public:
  explicit InFlight(ServerState& st) : st_(st) { st_.in_flight.fetch_add(1); }
  ~InFlight() { st_.in_flight.fetch_sub(1); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;

 private:
  ServerState& st_;
};

}  // namespace ckjit::serve
