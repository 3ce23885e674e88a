#pragma once
// One conversation over a loaded Model (llama.cpp's llama_context + mtmd's helpers): a decoder
// session (KV cache, arena, positions), the workers it runs on, and its limits (context length,
// prefill chunk, image token budget). It prepares and encodes images (their memory and their room
// in the context checked before the tower runs) and generates from a Prompt. Used by one thread
// at a time; contexts on one model may run concurrently.
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>

#include "graph/generate.h"
#include "graph/session.h"
#include "topology/workers.h"
#include "pair/model.h"
#include "pair/prompt.h"
#include "pair/prompt_cache.h"
#include "runtime/op_profile.h"
#include "runtime/tap.h"
#include "vision/image_input.h"

namespace ckjit::pair {

struct ContextOptions {
  int64_t n_ctx = 4096;
  int64_t n_batch = 512;                 // prefill rows per chunk
  int image_min_tokens = 8, image_max_tokens = 4096;  // rows per image (llama.cpp's defaults)
  graph::AttentionOrder attention = graph::AttentionOrder::tiled;
  bool check_memory = true;              // refuse KV cache, activations or an encode beyond the memory available
};

// An image's token limits, 0 meaning the default; with one of them given, the other default moves
// as far as it must not to cross it. Negative, or max below min: Error invalid_argument.
std::pair<int, int> image_token_limits(int min_tokens, int max_tokens, int default_min, int default_max);

// The context a job gets when none is given: 4096, or room for n_images images of image_max_tokens
// rows each with their start and end tokens, a chat prompt (kPromptRoom rows) and n_predict tokens,
// whichever is larger, so that a big page never fails for the context after its encode.
inline constexpr int64_t kPromptRoom = 256;
int64_t default_n_ctx(int n_images, int64_t image_max_tokens, int64_t n_predict);

class Context {
 public:
  // pool: the workers to run on (borrowed; e.g. the ones the model was loaded with); null: the
  // context's own, as many as the model's threads. Errors: invalid_argument (limits), out_of_memory.
  Context(std::shared_ptr<const Model> model, const ContextOptions& o, Workers* pool = nullptr);
  ~Context();

  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& model_ptr() const { return model_; }
  const ContextOptions& options() const { return opt_; }
  graph::Session& session() { return *session_; }
  const graph::Session& session() const { return *session_; }
  Workers& pool() { return *pool_; }

  // Decoded and preprocessed for this model's tower; Error no_vision without one, bad_image for
  // a broken image or one that would not fit the context.
  vision::PreparedImage prepare_image(const std::string& path) const;
  vision::PreparedImage prepare_image(std::span<const uint8_t> bytes, const std::string& name) const;
  // The same with this image's own token limits (a server request's); 0: the context's.
  vision::PreparedImage prepare_image(std::span<const uint8_t> bytes, const std::string& name, int min_tokens, int max_tokens) const;
  // Several images meant for one prompt: each prepared, and together checked against the context.
  std::vector<vision::PreparedImage> prepare_images(const std::vector<std::string>& paths) const;
  // Before encoding one more image for a prompt that already holds `pending_rows` image rows (with
  // their start and end tokens): Error (context_full) when the images alone would not fit.
  void require_image_room(const vision::PreparedImage& im, int64_t pending_rows) const;
  // Through the vision tower (its memory checked first); im's pixels are released.
  std::shared_ptr<const vision::ImageEmbedding> encode(vision::PreparedImage& im, OpProfile* prof = nullptr, Tap* tap = nullptr);

  // The prompt for this model at the session's next position (after what the session holds).
  RenderedPrompt render(const Prompt& p);
  // The prompt as the whole conversation from the start, reusing the session's KV rows of an
  // earlier prompt it shares a prefix with (pair/prompt_cache.h): the session keeps those rows and
  // forgets the rest; the result is the part still to prefill (the whole prompt when nothing is
  // shared). The same tokens and logits as prefilling the whole prompt on an empty session.
  RenderedPrompt render_reusing(const Prompt& p);
  int64_t reused_rows() const { return reused_; }  // by the last render_reusing (0 after render)
  // An empty KV cache (and nothing cached to reuse).
  void reset();
  // Changes of the KV rows outside render/generate, keeping the prompt cache true:
  void truncate(int64_t n_keep);                              // rows [n_keep, n_past) go
  void copy_prefix_from(const Context& src, int64_t n);       // rows [0, n) := src's (its cached prompt too)
  void rows_replaced() { cache_.forget_from(0); }             // e.g. a saved state was loaded
  void appending() { cache_.forget_from(session_->n_past()), reused_ = 0; }  // rows go after n_past
  // Token ids decoded after what the session holds, without sampling (llama_decode of one
  // sequence); logits of every row when all_logits, else of the last.
  graph::Logits decode_tokens(std::span<const int32_t> ids, bool all_logits);
  // Runs a rendered prompt (prefill, then decode); Error context_full when it does not fit.
  graph::GenerateResult generate(const RenderedPrompt& prompt, const graph::GenerateOptions& o, const graph::GenerateCallbacks& cb);

  double encode_ms() const { return encode_ms_; }  // every encode() so far

 private:
  void require_vision() const;
  std::shared_ptr<const Model> model_;
  ContextOptions opt_;
  std::unique_ptr<Workers> own_pool_;
  Workers* pool_ = nullptr;
  std::unique_ptr<graph::Session> session_;
  PromptCache cache_;
  int64_t reused_ = 0;
  double encode_ms_ = 0;
};

}  // namespace ckjit::pair
