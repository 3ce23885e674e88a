#include "pair/context.h"

#include <algorithm>
#include <chrono>
#include <tuple>

#include "pair/pair_checks.h"
#include "runtime/error.h"
#include "topology/memory.h"

namespace ckjit::pair {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

Context::Context(std::shared_ptr<const Model> model, const ContextOptions& o, Workers* pool)
    : model_(std::move(model)), opt_(o), pool_(pool) {
  if (opt_.n_ctx < 1) throw Error("$n_ctx must be at least 1", ErrorKind::invalid_argument);
  if (opt_.n_batch < 1) throw Error("$n_batch must be at least 1", ErrorKind::invalid_argument);
  if (opt_.image_min_tokens < 1 || opt_.image_max_tokens < opt_.image_min_tokens)
    throw Error("$image_min_tokens must be at least 1 and at most $image_max_tokens", ErrorKind::invalid_argument);
  if (!pool_) pool_ = (own_pool_ = Workers::for_budget(model_->machine(), model_->threads())).get();
  graph::SessionOptions so;
  so.n_ctx = opt_.n_ctx;
  so.n_ubatch = std::min(opt_.n_batch, opt_.n_ctx);
  so.attention = opt_.attention;
  so.check_memory = opt_.check_memory;
  session_ = std::make_unique<graph::Session>(model_->text(), so, *pool_);
}

Context::~Context() = default;

void Context::require_vision() const {
  if (!model_->vision()) throw Error("the model was loaded without an mmproj: it cannot read images", ErrorKind::no_vision);
}

int64_t default_n_ctx(int n_images, int64_t image_max_tokens, int64_t n_predict) {
  const int64_t base = ContextOptions{}.n_ctx;
  return n_images > 0 ? std::max(base, n_images * (image_max_tokens + 2) + kPromptRoom + n_predict) : base;
}

std::pair<int, int> image_token_limits(int min_tokens, int max_tokens, int default_min, int default_max) {
  if (min_tokens < 0 || max_tokens < 0) throw Error("image token limits must not be negative", ErrorKind::invalid_argument);
  if (!min_tokens) min_tokens = max_tokens ? std::min(default_min, max_tokens) : default_min;
  if (!max_tokens) max_tokens = std::max(default_max, min_tokens);
  if (max_tokens < min_tokens)
    throw Error("the image's max tokens (" + std::to_string(max_tokens) + ") are below its min tokens (" + std::to_string(min_tokens) + ")",
                ErrorKind::invalid_argument);
  return {min_tokens, max_tokens};
}

vision::PreparedImage Context::prepare_image(const std::string& path) const {
  require_vision();
  require_readable(path, "image");
  const auto pp = model_->vision()->preprocess_params(opt_.image_min_tokens, opt_.image_max_tokens);
  return classify_errors(ErrorKind::bad_image, [&] { return vision::prepare_image(path, pp); });
}

vision::PreparedImage Context::prepare_image(std::span<const uint8_t> bytes, const std::string& name) const {
  return prepare_image(bytes, name, 0, 0);
}

vision::PreparedImage Context::prepare_image(std::span<const uint8_t> bytes, const std::string& name, int min_tokens, int max_tokens) const {
  require_vision();
  std::tie(min_tokens, max_tokens) = image_token_limits(min_tokens, max_tokens, opt_.image_min_tokens, opt_.image_max_tokens);
  if (bytes.empty()) throw Error(name + " is empty", ErrorKind::bad_image);
  const auto pp = model_->vision()->preprocess_params(min_tokens, max_tokens);
  return classify_errors(ErrorKind::bad_image, [&] { return vision::prepare_image(bytes, name, pp); });
}

std::vector<vision::PreparedImage> Context::prepare_images(const std::vector<std::string>& paths) const {
  std::vector<vision::PreparedImage> out;
  int64_t rows = 0;
  for (const std::string& path : paths) {
    out.push_back(prepare_image(path));
    require_image_room(out.back(), rows);
    rows += out.back().n_rows + 2;
  }
  return out;
}

void Context::require_image_room(const vision::PreparedImage& im, int64_t pending_rows) const {
  const int64_t rows = pending_rows + im.n_rows + 2;  // <|vision_start|>, the rows, <|vision_end|>
  graph::require_room(*session_, rows, im.name + ": the image gives " + std::to_string(im.n_rows) + " rows (" +
                         std::to_string(im.pixels.width) + " x " + std::to_string(im.pixels.height) + " canvas); the images take " +
                         std::to_string(rows) + " rows with their start and end tokens, more than the context",
                      "raise $n_ctx or lower $image_max_tokens");
}

std::shared_ptr<const vision::ImageEmbedding> Context::encode(vision::PreparedImage& im, OpProfile* prof, Tap* tap) {
  require_vision();
  const auto t0 = Clock::now();
  if (opt_.check_memory)
    topo::require_memory(model_->vision()->encode_bytes(im.n_rows * 4),
                         "the vision tower on " + im.name + " (" + std::to_string(im.n_rows) + " rows)", "lower $image_max_tokens");
  auto rows = std::make_shared<const vision::ImageEmbedding>(model_->vision()->encode(*pool_, im.pixels, prof, tap, session_->abort()));
  im.pixels = {};
  encode_ms_ += ms_since(t0);
  return rows;
}

RenderedPrompt Context::render(const Prompt& p) {
  cache_.forget_from(session_->n_past());
  reused_ = 0;
  return p.render(*model_, session_->next_position());
}

RenderedPrompt Context::render_reusing(const Prompt& p) {
  cache_.forget_from(session_->n_past());
  RenderedPrompt whole = p.render(*model_, 0);
  std::vector<uint64_t> keys = prompt_row_keys(p, whole);
  reused_ = cache_.reusable(keys, whole, session_->n_past(), session_->options().n_ubatch);
  session_->truncate(reused_);
  cache_.remember(std::move(keys));  // rows past n_past once the prefill stops short are forgotten next time
  return reused_ == 0 ? whole : prompt_suffix(whole, reused_);
}

void Context::truncate(int64_t n_keep) {
  session_->truncate(n_keep);
  cache_.forget_from(n_keep);
}

void Context::copy_prefix_from(const Context& src, int64_t n) {
  session_->copy_prefix_from(*src.session_, n);
  cache_.copy_from(src.cache_, n);
}

graph::Logits Context::decode_tokens(std::span<const int32_t> ids, bool all_logits) {
  appending();
  graph::Batch b;
  const int64_t p0 = session_->next_position();
  for (size_t i = 0; i < ids.size(); ++i) b.add_token(ids[i], graph::Position::text(p0 + int64_t(i)), all_logits || i + 1 == ids.size());
  return session_->decode(b);
}

void Context::reset() {
  session_->reset();
  cache_.forget_from(0);
  reused_ = 0;
}

graph::GenerateResult Context::generate(const RenderedPrompt& prompt, const graph::GenerateOptions& o,
                                        const graph::GenerateCallbacks& cb) {
  return prompt.bridge ? graph::generate(*session_, model_->tokenizer(), *prompt.bridge, o, cb)
                       : graph::generate(*session_, model_->tokenizer(), prompt.ids, o, cb);
}

}  // namespace ckjit::pair
