#pragma once
// What the C API's handles hold, and the registry that tells a live handle from a freed or foreign
// pointer without dereferencing it (a lookup by address under a mutex).
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "pair/batcher.h"
#include "pair/context.h"
#include "pair/model.h"
#include "pair/prompt.h"
#include "vision/vision_model.h"

#include "include/ckjit.h"

namespace ckjit::capi {

// The loaded pair and the defaults its sessions take, shared by the model handle and its sessions
// (a session keeps it alive).
struct ModelCore {
  std::shared_ptr<const pair::Model> pair;
  int64_t n_ctx = 4096, n_batch = 512;
  double load_ms = 0;
};

// A handle's last error, readable from any thread.
class ErrorSlot {
 public:
  void set(const std::string& m) { std::lock_guard<std::mutex> l(mu_); msg_ = m; }
  const char* get() const;  // valid until the next set on this handle
 private:
  mutable std::mutex mu_;
  std::string msg_;
  mutable std::string copy_;
};

}  // namespace ckjit::capi

struct ckjit_model {
  std::shared_ptr<ckjit::capi::ModelCore> core;
  ckjit::capi::ErrorSlot error;
};

struct ckjit_session {
  std::shared_ptr<ckjit::capi::ModelCore> core;
  std::unique_ptr<ckjit::pair::Context> ctx;
  ckjit_session_params params{};
  // The pending prompt in call order: text runs and encoded images, whose rows are shared with
  // ckjit_image handles (and so with other sessions' prompts), never copied.
  ckjit::pair::Prompt prompt;
  void clear_prompt() { prompt.clear(); }
  std::vector<float> logits;
  std::vector<float> decoded_logits;  // the rows of the last ckjit_session_decode / ckjit_decode_together
  int64_t decoded_rows = 0;
  ckjit_stop_reason last_stop = CKJIT_STOP_NONE;  // of the last generation
  ckjit_timings timings = [] {
    ckjit_timings t;
    ckjit_timings_init(&t);
    return t;
  }();
  ckjit::capi::ErrorSlot error;
};

// A continuous-batching engine over one model (pair::Batcher): ckjit_batcher_generate calls from
// several threads run together.
struct ckjit_batcher {
  std::shared_ptr<ckjit::capi::ModelCore> core;
  std::unique_ptr<ckjit::pair::Batcher> batcher;
  ckjit::capi::ErrorSlot error;
};

// An encoded image: the model it belongs to (rows fit only that text model) and its rows.
struct ckjit_image {
  std::shared_ptr<ckjit::capi::ModelCore> core;
  std::shared_ptr<const ckjit::vision::ImageEmbedding> rows;
};

namespace ckjit::capi {

// Live handles by address and kind: registered on creation, unregistered before deletion, looked
// up by every call (a model handle passed as a session is "foreign").
enum class Kind { model, session, image, batcher };
void register_handle(const void* h, Kind k);
void unregister_handle(const void* h);
bool live_handle(const void* h, Kind k);
// Unregisters h if it is a live handle of kind k, atomically (true: the caller now owns it).
bool take_handle(const void* h, Kind k);

}  // namespace ckjit::capi
