// The C API (include/ckjit.h) over the model / session layer. Every entry point catches every
// exception: a ckjit::Error becomes the status its context implies and the message is kept for
// ckjit_last_error() and the handle's own last error (capi/call_guard.h).
#include <chrono>
#include <cstddef>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>


#include "capi/call_guard.h"
#include "capi/handles.h"
#include "pair/generate_together.h"
#include "runtime/error.h"
#include "runtime/structured/gbnf.h"
#include "runtime/structured/json_schema.h"
#include "runtime/image/image.h"
#include "runtime/image/preprocess.h"
#include "runtime/tokenizer/chat_template.h"

using namespace ckjit;
using capi::Kind;
using namespace ckjit::capi;

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// This library's defaults of each parameter struct.
void model_defaults(ckjit_model_params& p) {
  p.use_profile = 1;
  p.n_sessions = 1;
  p.image_max_tokens = pair::ContextOptions{}.image_max_tokens;  // a session's default, counted at load
}
void session_defaults(ckjit_session_params&) {}
void generate_defaults(ckjit_generate_params& p) {
  p.n_predict = 256;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.05f;
  p.repeat_penalty = 1.0f;
  p.repeat_last_n = 64;
}

// The defaults into the caller's struct of struct_size bytes (the size the caller was compiled
// with): an older caller's smaller struct gets the fields it has, a newer caller's larger one
// zeros past this library's fields. Less than the struct_size field itself: nothing is written.
template <class T>
void init_params(T* p, uint32_t struct_size, void (*fill)(T&)) {
  if (!p || struct_size < sizeof(uint32_t)) return;
  T d{};
  fill(d);
  d.struct_size = struct_size;
  std::memset(static_cast<void*>(p), 0, struct_size);
  std::memcpy(static_cast<void*>(p), &d, std::min<size_t>(struct_size, sizeof(T)));
}

// The caller's struct, read only as far as its struct_size says (older callers, smaller structs).
template <class T>
T read_params(const T* given, void (*fill)(T&)) {
  T p{};
  fill(p);
  p.struct_size = sizeof(T);
  if (given) {
    if (given->struct_size < sizeof(uint32_t) || given->struct_size > sizeof(T))
      raise(CKJIT_ERR_INVALID_ARGUMENT, "struct_size is " + std::to_string(given->struct_size) + ", not that of this library's struct (" +
                                            std::to_string(sizeof(T)) + "); fill it with the *_default() function first");
    std::memcpy(&p, given, given->struct_size);
  }
  return p;
}

const topo::Machine& machine() { return topo::this_machine(); }

}  // namespace

extern "C" {

const char* ckjit_version(void) { return "0.3.4"; }

const char* ckjit_status_name(ckjit_status s) {
  // A C caller may pass any int; in C++ a value outside the enumerators' range is undefined once
  // loaded as the enum (clang's UBSan -fsanitize=enum says so): read the bits as an int.
  int v = 0;
  static_assert(sizeof(ckjit_status) == sizeof(int));
  std::memcpy(&v, &s, sizeof v);
  switch (v) {
    case CKJIT_OK: return "ok";
    case CKJIT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case CKJIT_ERR_BAD_HANDLE: return "bad handle";
    case CKJIT_ERR_IO: return "i/o error";
    case CKJIT_ERR_BAD_MODEL: return "bad model";
    case CKJIT_ERR_BAD_IMAGE: return "bad image";
    case CKJIT_ERR_NO_VISION: return "no vision tower";
    case CKJIT_ERR_CONTEXT_FULL: return "context full";
    case CKJIT_ERR_CANCELLED: return "cancelled";
    case CKJIT_ERR_BUFFER_TOO_SMALL: return "buffer too small";
    case CKJIT_ERR_UNSUPPORTED: return "unsupported";
    case CKJIT_ERR_OUT_OF_MEMORY: return "out of memory";
    case CKJIT_ERR_INTERNAL: return "internal error";
  }
  return "unknown status";
}

const char* ckjit_last_error(void) { return capi::thread_last_error().c_str(); }

// Function-local statics: built once (thread-safe), then only read.
const char* ckjit_machine_name(void) {
  const char* out = nullptr;
  guarded(nullptr, CKJIT_ERR_INTERNAL, [&] {
    static const std::string n = machine().name();
    out = n.c_str();
    return CKJIT_OK;
  });
  return out;
}

const char* ckjit_machine_json(void) {
  const char* out = nullptr;
  guarded(nullptr, CKJIT_ERR_INTERNAL, [&] {
    static const std::string j = machine().to_json();
    out = j.c_str();
    return CKJIT_OK;
  });
  return out;
}

void ckjit_model_params_init(ckjit_model_params* p, uint32_t struct_size) { init_params(p, struct_size, model_defaults); }

ckjit_status ckjit_model_load(const char* model_path, const char* mmproj_path, const ckjit_model_params* given, ckjit_model** out) {
  if (out) *out = nullptr;
  return guarded(nullptr, CKJIT_ERR_BAD_MODEL, [&] {
    need(out, "out");
    need(model_path, "model_path");
    ckjit_model_params p = read_params(given, model_defaults);
    // A caller from before 0.3.3 plans no sessions: its load is checked as it was then.
    if (given && given->struct_size < offsetof(ckjit_model_params, n_sessions) + sizeof(int32_t)) p.n_sessions = 0;
    if (p.n_threads < 0 || p.n_ctx < 0 || p.n_batch < 0 || p.n_sessions < 0 || p.image_max_tokens < 0)
      raise(CKJIT_ERR_INVALID_ARGUMENT, "n_threads, n_ctx, n_batch, n_sessions and image_max_tokens must not be negative");
    auto progress = [&](float f) {
      if (p.progress && p.progress(f, p.progress_user_data)) raise(CKJIT_ERR_CANCELLED, "the load was cancelled by its progress callback");
    };
    auto core = std::make_shared<capi::ModelCore>();
    core->n_ctx = p.n_ctx > 0 ? p.n_ctx : 4096;
    core->n_batch = p.n_batch > 0 ? p.n_batch : 512;
    pair::LoadOptions lo;
    lo.model_path = model_path;
    if (mmproj_path) lo.mmproj_path = mmproj_path;
    if (p.find_mmproj < CKJIT_MMPROJ_NONE || p.find_mmproj > CKJIT_MMPROJ_FIND_IF_ANY)
      raise(CKJIT_ERR_INVALID_ARGUMENT, "find_mmproj must be CKJIT_MMPROJ_NONE, CKJIT_MMPROJ_FIND or CKJIT_MMPROJ_FIND_IF_ANY");
    lo.want_vision = !mmproj_path && p.find_mmproj != CKJIT_MMPROJ_NONE;
    lo.vision_optional = p.find_mmproj == CKJIT_MMPROJ_FIND_IF_ANY;
    lo.threads = p.n_threads;
    lo.max_isa = p.max_isa ? p.max_isa : "";
    lo.use_profile = p.use_profile != 0;
    lo.plan_rows = core->n_batch;  // the sessions' default chunk: what their prefill runs
    lo.planned_sessions = {p.n_sessions, core->n_ctx, core->n_batch, p.image_max_tokens};
    if (p.vision_precision) {
      const std::string vp = p.vision_precision;
      if (vp != "f32" && vp != "int8" && vp != "bf16")
        raise(CKJIT_ERR_INVALID_ARGUMENT, "vision_precision must be NULL, \"f32\", \"int8\" or \"bf16\"");
      lo.vision_precision = vision::parse_precision(vp);
    }
    lo.progress = progress;
    const auto t0 = Clock::now();
    core->pair = pair::Model::load(lo);
    core->load_ms = ms_since(t0);
    auto* m = new ckjit_model;
    m->core = std::move(core);
    capi::register_handle(m, Kind::model);
    *out = m;
    return CKJIT_OK;
  });
}

void ckjit_model_free(ckjit_model* m) {
  if (!m || !capi::live_handle(m, Kind::model)) return;
  capi::unregister_handle(m);
  delete m;
}

const char* ckjit_model_last_error(const ckjit_model* m) {
  if (!m || !capi::live_handle(m, Kind::model)) return "not a live model handle";
  return m->error.get();
}

int32_t ckjit_model_n_vocab(const ckjit_model* m) {
  if (!m || !capi::live_handle(m, Kind::model)) return 0;
  return int32_t(m->core->pair->hparams().n_vocab);
}

int32_t ckjit_model_has_vision(const ckjit_model* m) {
  if (!m || !capi::live_handle(m, Kind::model)) return 0;
  return m->core->pair->vision() ? 1 : 0;
}

int64_t ckjit_model_image_rows(const ckjit_model* m, int32_t width, int32_t height, int32_t min_tokens, int32_t max_tokens) {
  if (!m || !capi::live_handle(m, Kind::model) || width <= 0 || height <= 0 || min_tokens < 0 || max_tokens < 0) return 0;
  const vision::VisionModel* v = m->core->pair->vision();
  if (!v) return 0;
  try {
    const pair::ContextOptions defaults;
    const auto [lo, hi] = pair::image_token_limits(min_tokens, max_tokens, defaults.image_min_tokens, defaults.image_max_tokens);
    const image::PreprocessParams p = v->preprocess_params(lo, hi);
    return image::plan_resize(width, height, p).n_tokens(p.factor());
  } catch (const std::exception&) {
    return 0;
  }
}

const char* ckjit_model_mmproj_path(const ckjit_model* m) {
  if (!m || !capi::live_handle(m, Kind::model)) return "";
  return m->core->pair->mmproj_path().c_str();
}

double ckjit_model_load_ms(const ckjit_model* m) {
  if (!m || !capi::live_handle(m, Kind::model)) return 0;
  return m->core->load_ms;
}

ckjit_status ckjit_tokenize(const ckjit_model* model, const char* text, int32_t parse_special, int32_t* tokens, size_t capacity,
                            size_t* n_tokens) {
  capi::ErrorSlot* slot = slot_of(model);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_model* m = model_of(model);
    need(text, "text");
    need(n_tokens, "n_tokens");
    if (capacity > 0) need(tokens, "tokens");
    const std::vector<int32_t> ids = m->core->pair->tokenizer().encode(text, /*add_special=*/true, parse_special != 0);
    *n_tokens = ids.size();
    if (ids.size() > capacity)
      raise(CKJIT_ERR_BUFFER_TOO_SMALL, "the text has " + std::to_string(ids.size()) + " tokens, capacity " + std::to_string(capacity));
    std::copy(ids.begin(), ids.end(), tokens);
    return CKJIT_OK;
  });
}

ckjit_status ckjit_detokenize(const ckjit_model* model, const int32_t* tokens, size_t n, int32_t special, char* buf, size_t size,
                              size_t* needed) {
  capi::ErrorSlot* slot = slot_of(model);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_model* m = model_of(model);
    if (n > 0) need(tokens, "tokens");
    need(needed, "needed");
    if (size > 0) need(buf, "buf");
    const int32_t V = m->core->pair->tokenizer().n_tokens();
    for (size_t i = 0; i < n; ++i)
      if (tokens[i] < 0 || tokens[i] >= V)
        raise(CKJIT_ERR_INVALID_ARGUMENT, "token " + std::to_string(tokens[i]) + " is outside the vocabulary (" + std::to_string(V) + ")");
    const std::string text = m->core->pair->tokenizer().decode(std::span<const int32_t>(tokens, n), special != 0);
    *needed = text.size() + 1;
    if (size < text.size() + 1) raise(CKJIT_ERR_BUFFER_TOO_SMALL, "the text needs " + std::to_string(text.size() + 1) + " bytes");
    std::memcpy(buf, text.c_str(), text.size() + 1);
    return CKJIT_OK;
  });
}

int32_t ckjit_token_bos(const ckjit_model* m) {
  return m && capi::live_handle(m, Kind::model) ? m->core->pair->tokenizer().bos_id() : -1;
}

int32_t ckjit_token_eos(const ckjit_model* m) {
  return m && capi::live_handle(m, Kind::model) ? m->core->pair->tokenizer().eos_id() : -1;
}

int32_t ckjit_token_is_eog(const ckjit_model* m, int32_t token) {
  if (!m || !capi::live_handle(m, Kind::model)) return 0;
  const tok::Tokenizer& t = m->core->pair->tokenizer();
  return token >= 0 && token < t.n_tokens() && t.is_eog(token) ? 1 : 0;
}

ckjit_status ckjit_token_to_piece(const ckjit_model* model, int32_t token, int32_t special, char* buf, size_t size,
                                  size_t* n_bytes) {
  capi::ErrorSlot* slot = slot_of(model);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_model* m = model_of(model);
    need(n_bytes, "n_bytes");
    if (size > 0) need(buf, "buf");
    const tok::Tokenizer& t = m->core->pair->tokenizer();
    if (token < 0 || token >= t.n_tokens())
      raise(CKJIT_ERR_INVALID_ARGUMENT, "token " + std::to_string(token) + " is outside the vocabulary (" + std::to_string(t.n_tokens()) + ")");
    const std::string piece = t.token_to_piece(token, special != 0);
    *n_bytes = piece.size();
    if (size < piece.size()) raise(CKJIT_ERR_BUFFER_TOO_SMALL, "the piece needs " + std::to_string(piece.size()) + " bytes");
    std::memcpy(buf, piece.data(), piece.size());
    return CKJIT_OK;
  });
}

void ckjit_session_params_init(ckjit_session_params* p, uint32_t struct_size) { init_params(p, struct_size, session_defaults); }


ckjit_status ckjit_session_new(ckjit_model* model, const ckjit_session_params* given, ckjit_session** out) {
  if (out) *out = nullptr;
  capi::ErrorSlot* slot = slot_of(model);
  return guarded(slot, CKJIT_ERR_OUT_OF_MEMORY, [&] {  // what the session's own checks refuse: its memory
    need(out, "out");
    ckjit_model* m = model_of(model);
    ckjit_session_params p = read_params(given, session_defaults);
    if (p.n_ctx < 0 || p.n_batch < 0 || p.image_min_tokens < 0 || p.image_max_tokens < 0)
      raise(CKJIT_ERR_INVALID_ARGUMENT, "session parameters must not be negative");
    if (p.n_ctx == 0) p.n_ctx = int32_t(m->core->n_ctx);
    if (p.n_batch == 0) p.n_batch = int32_t(m->core->n_batch);
    if (p.image_min_tokens == 0) p.image_min_tokens = 8;
    if (p.image_max_tokens == 0) p.image_max_tokens = 4096;
    if (p.image_max_tokens < p.image_min_tokens) raise(CKJIT_ERR_INVALID_ARGUMENT, "image_max_tokens is below image_min_tokens");
    auto s = std::make_unique<ckjit_session>();
    s->core = m->core;
    s->params = p;
    pair::ContextOptions co;
    co.n_ctx = p.n_ctx;
    co.n_batch = p.n_batch;
    co.image_min_tokens = p.image_min_tokens, co.image_max_tokens = p.image_max_tokens;
    s->ctx = std::make_unique<pair::Context>(m->core->pair, co);
    s->timings.load_ms = m->core->load_ms;
    capi::register_handle(s.get(), Kind::session);
    *out = s.release();
    return CKJIT_OK;
  });
}

void ckjit_session_free(ckjit_session* s) {
  if (!s || !capi::live_handle(s, Kind::session)) return;
  capi::unregister_handle(s);
  delete s;
}

const char* ckjit_session_last_error(const ckjit_session* s) {
  if (!s || !capi::live_handle(s, Kind::session)) return "not a live session handle";
  return s->error.get();
}

ckjit_status ckjit_session_reset(ckjit_session* session) {
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INTERNAL, [&] {
    ckjit_session* s = session_of(session);
    s->ctx->reset();
    s->clear_prompt();
    s->logits.clear();
    s->decoded_logits.clear();
    s->decoded_rows = 0;
    const double load = s->timings.load_ms;
    ckjit_timings_init(&s->timings);
    s->timings.load_ms = load;
    return CKJIT_OK;
  });
}

ckjit_status ckjit_session_set_abort_callback(ckjit_session* session, ckjit_abort_fn abort, void* user_data) {
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* s = session_of(session);
    if (!abort) s->ctx->session().set_abort({});
    else s->ctx->session().set_abort([abort, user_data] { return abort(user_data) != 0; });
    return CKJIT_OK;
  });
}

ckjit_status ckjit_session_add_text(ckjit_session* session, const char* text) {
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* s = session_of(session);
    need(text, "text");
    s->prompt.add_text(text);
    return CKJIT_OK;
  });
}

namespace {
// Decodes, preprocesses and encodes one image on the session's workers (the caller's guard catches).
std::shared_ptr<const vision::ImageEmbedding> encode_image(ckjit_session* s,
                                                           const std::function<vision::PreparedImage(const pair::Context&)>& prepare) {
  const auto t0 = Clock::now();
  vision::PreparedImage im = prepare(*s->ctx);
  // A page too big for the context is refused from its header size, before seconds of encoding.
  int64_t pending = 0;
  for (const auto& e : s->prompt.images()) pending += e->n_rows() + 2;
  s->ctx->require_image_room(im, pending);
  auto rows = s->ctx->encode(im);
  s->timings.encode_ms += ms_since(t0);
  return rows;
}

// Encodes one image into the pending prompt.
ckjit_status add_image(ckjit_session* session, const std::function<vision::PreparedImage(const pair::Context&)>& prepare) {
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_BAD_IMAGE, [&] {
    ckjit_session* s = session_of(session);
    s->prompt.add_image(encode_image(s, prepare));
    return CKJIT_OK;
  });
}

vision::PreparedImage prepare_bytes(const pair::Context& ctx, const void* data, size_t size, int32_t min_tokens = 0, int32_t max_tokens = 0) {
  need(data, "data");
  if (size == 0) raise(CKJIT_ERR_BAD_IMAGE, "the image buffer is empty");
  return ctx.prepare_image(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size), "image buffer", min_tokens, max_tokens);
}

const ckjit_image* image_of(const ckjit_image* im) {
  if (!im) raise(CKJIT_ERR_INVALID_ARGUMENT, "the image handle is NULL");
  if (!capi::live_handle(im, Kind::image))
    raise(CKJIT_ERR_BAD_HANDLE, "not a live image handle (freed, or not from ckjit_image_encode_bytes)");
  return im;
}
}  // namespace

ckjit_status ckjit_session_add_image_file(ckjit_session* session, const char* path) {
  if (!path) return add_image(session, [](const pair::Context&) -> vision::PreparedImage { raise(CKJIT_ERR_INVALID_ARGUMENT, "path is NULL"); });
  return add_image(session, [&](const pair::Context& ctx) { return ctx.prepare_image(std::string(path)); });
}

ckjit_status ckjit_session_add_image_bytes(ckjit_session* session, const void* data, size_t size) {
  return add_image(session, [&](const pair::Context& ctx) { return prepare_bytes(ctx, data, size); });
}

ckjit_status ckjit_json_schema_check(const char* schema) {
  return guarded(nullptr, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    need(schema, "schema");
    structured::compile_json_schema(schema);
    return CKJIT_OK;
  });
}

ckjit_status ckjit_grammar_check(const char* grammar) {
  return guarded(nullptr, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    need(grammar, "grammar");
    structured::compile_gbnf(grammar);
    return CKJIT_OK;
  });
}

ckjit_status ckjit_image_info(const void* data, size_t size, int32_t* width, int32_t* height) {
  if (width) *width = 0;
  if (height) *height = 0;
  return guarded(nullptr, CKJIT_ERR_BAD_IMAGE, [&] {
    need(data, "data");
    need(width, "width");
    need(height, "height");
    // The header checks decode() makes, without its size limit: the caller applies its own.
    image::DecodeLimits any_size;
    any_size.max_pixels = INT64_MAX, any_size.max_side = INT32_MAX;
    const image::Header hd = image::read_header(std::span<const uint8_t>(static_cast<const uint8_t*>(data), size), "image", any_size);
    const int w = hd.width, h = hd.height;
    *width = w, *height = h;
    return CKJIT_OK;
  });
}

ckjit_status ckjit_image_encode_bytes(ckjit_session* session, const void* data, size_t size, ckjit_image** out) {
  return ckjit_image_encode_bytes_limits(session, data, size, 0, 0, out);
}

ckjit_status ckjit_image_encode_bytes_limits(ckjit_session* session, const void* data, size_t size, int32_t min_tokens,
                                             int32_t max_tokens, ckjit_image** out) {
  if (out) *out = nullptr;
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_BAD_IMAGE, [&] {
    need(out, "out");
    ckjit_session* s = session_of(session);
    auto rows = encode_image(s, [&](const pair::Context& ctx) { return prepare_bytes(ctx, data, size, min_tokens, max_tokens); });
    auto* im = new ckjit_image{s->core, std::move(rows)};
    capi::register_handle(im, Kind::image);
    *out = im;
    return CKJIT_OK;
  });
}

ckjit_status ckjit_session_add_image(ckjit_session* session, const ckjit_image* image) {
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* s = session_of(session);
    const ckjit_image* im = image_of(image);
    if (!s->core->pair->vision()) raise(CKJIT_ERR_NO_VISION, "the model was loaded without an mmproj: it cannot read images");
    if (im->core != s->core) raise(CKJIT_ERR_INVALID_ARGUMENT, "the image was encoded for another model");
    s->prompt.add_image(im->rows);
    return CKJIT_OK;
  });
}

void ckjit_image_free(ckjit_image* im) {
  // Unregistered first and only once: a second free of the same pointer finds it dead.
  if (!im || !capi::take_handle(im, Kind::image)) return;
  delete im;
}

int64_t ckjit_image_n_rows(const ckjit_image* im) {
  if (!im || !capi::live_handle(im, Kind::image)) return 0;
  return im->rows->n_rows();
}

size_t ckjit_image_bytes(const ckjit_image* im) {
  if (!im || !capi::live_handle(im, Kind::image)) return 0;
  return im->rows->rows.size() * sizeof(float);
}

ckjit_status ckjit_chat_render(const ckjit_model* model, const ckjit_chat_message* messages, size_t n_messages,
                               int32_t add_generation_prompt, char* buf, size_t size, size_t* needed) {
  capi::ErrorSlot* slot = slot_of(model);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    const ckjit_model* m = model_of(model);
    need(needed, "needed");
    if (n_messages > 0) need(messages, "messages");
    if (size > 0) need(buf, "buf");
    // Elements are struct_size bytes apart: the caller's struct (this library's, for now).
    const uint32_t stride = n_messages > 0 ? messages[0].struct_size : 0;
    if (n_messages > 0 && stride != sizeof(ckjit_chat_message))
      raise(CKJIT_ERR_INVALID_ARGUMENT, "message 0's struct_size is " + std::to_string(stride) + ", not sizeof(ckjit_chat_message) = " +
                                            std::to_string(sizeof(ckjit_chat_message)) + " (CKJIT_CHAT_MESSAGE fills it)");
    std::vector<tok::ChatMessage> msgs;
    for (size_t i = 0; i < n_messages; ++i) {
      if (messages[i].struct_size != stride)
        raise(CKJIT_ERR_INVALID_ARGUMENT, "message " + std::to_string(i) + "'s struct_size differs from message 0's");
      if (!messages[i].role || !messages[i].content)
        raise(CKJIT_ERR_INVALID_ARGUMENT, "message " + std::to_string(i) + " has a NULL role or content");
      msgs.push_back({messages[i].role, messages[i].content, std::nullopt});
    }
    tok::ChatOptions co;
    co.add_generation_prompt = add_generation_prompt != 0;
    const gguf::GgufFile& file = m->core->pair->text_file();
    try {
      if (file.has("tokenizer.chat_template")) co.style = tok::chat_style_from_template(file.get_string("tokenizer.chat_template"));
    } catch (const Error& e) {
      raise(CKJIT_ERR_UNSUPPORTED, e.what());
    }
    const std::string text = tok::render_chat(msgs, co);
    *needed = text.size() + 1;
    if (size < text.size() + 1) raise(CKJIT_ERR_BUFFER_TOO_SMALL, "the chat needs " + std::to_string(text.size() + 1) + " bytes");
    std::memcpy(buf, text.c_str(), text.size() + 1);
    return CKJIT_OK;
  });
}

void ckjit_generate_params_init(ckjit_generate_params* p, uint32_t struct_size) { init_params(p, struct_size, generate_defaults); }


}  // extern "C"

namespace {

// What one session's generation takes from the C params, and what it leaves in the session.
struct SessionRun {
  ckjit_session* s;
  ckjit_generate_params p;
  graph::GenerateOptions go;
  graph::GenerateCallbacks cb;
  pair::RenderedPrompt prompt;
};

// The pending prompt after what the session holds, or (cache_prompt) as the whole conversation
// reusing the session's cached prefix.
pair::RenderedPrompt render_pending(ckjit_session* s, const ckjit_generate_params& p) {
  return p.cache_prompt ? s->ctx->render_reusing(s->prompt) : s->ctx->render(s->prompt);
}

void setup_run(SessionRun& run, ckjit_session* s, const ckjit_generate_params* given) {
  run.s = s;
  s->last_stop = CKJIT_STOP_NONE;
  run.p = read_params(given, generate_defaults);
  const ckjit_generate_params& p = run.p;
  if (p.n_predict < 0) raise(CKJIT_ERR_INVALID_ARGUMENT, "n_predict must not be negative");
  if (s->prompt.empty()) raise(CKJIT_ERR_INVALID_ARGUMENT, "the prompt is empty (add text or an image first)");
  s->prompt.chat = p.chat != 0;
  run.go.n_predict = p.n_predict;
  run.go.ignore_eos = p.ignore_eos != 0;
  run.go.sampler.temp = p.temp, run.go.sampler.seed = p.seed, run.go.sampler.top_k = p.top_k, run.go.sampler.top_p = p.top_p;
  run.go.sampler.min_p = p.min_p, run.go.sampler.repeat_penalty = p.repeat_penalty, run.go.sampler.repeat_last_n = p.repeat_last_n;
  run.go.sampler.frequency_penalty = p.frequency_penalty, run.go.sampler.presence_penalty = p.presence_penalty;
  if (p.n_logit_bias > 0 && !p.logit_bias) raise(CKJIT_ERR_INVALID_ARGUMENT, "n_logit_bias is set but logit_bias is NULL");
  for (size_t i = 0; i < p.n_logit_bias; ++i) run.go.sampler.logit_bias.emplace_back(p.logit_bias[i].token, p.logit_bias[i].bias);
  if (p.json_schema && p.grammar) raise(CKJIT_ERR_INVALID_ARGUMENT, "give json_schema or grammar, not both");
  if (p.json_schema) run.go.grammar = s->ctx->model().json_grammar(p.json_schema, "json_schema");
  if (p.grammar) run.go.grammar = s->ctx->model().gbnf_grammar(p.grammar, "grammar");
  run.cb.on_logits = [s](const float* l, int64_t n) { s->logits.assign(l, l + n); };
  if (p.on_token) {
    const ckjit_token_fn fn = p.on_token;
    void* user = p.user_data;
    run.cb.on_token = [fn, user](int32_t id, const std::string& text) { return fn(id, text.c_str(), user) == 0; };
  }
}

ckjit_stop_reason stop_reason(graph::StopReason r) {
  switch (r) {
    case graph::StopReason::none: return CKJIT_STOP_NONE;
    case graph::StopReason::length: return CKJIT_STOP_LENGTH;
    case graph::StopReason::end_of_generation: return CKJIT_STOP_END_OF_GENERATION;
    case graph::StopReason::callback: return CKJIT_STOP_CALLBACK;
    case graph::StopReason::context_full: return CKJIT_STOP_CONTEXT_FULL;
    case graph::StopReason::cancelled: return CKJIT_STOP_CANCELLED;
  }
  return CKJIT_STOP_NONE;
}

void record_run(ckjit_session* s, const graph::GenerateResult& r) {
  s->last_stop = stop_reason(r.stop);
  ckjit_timings& t = s->timings;
  t.prefill_ms += r.prefill_ms, t.image_prefill_ms += r.image_prefill_ms, t.decode_ms += r.decode_ms;
  t.n_prompt += r.n_prompt, t.n_image_rows += r.n_image_rows, t.n_decoded += r.n_decoded;
}

// The run's counts into the session and the generated ids into the caller's buffer.
ckjit_status finish_run(ckjit_session* s, const graph::GenerateResult& r, int32_t* tokens, size_t capacity, size_t* n_generated) {
  record_run(s, r);
  if (n_generated) *n_generated = r.generated.size();
  std::copy_n(r.generated.begin(), std::min(capacity, r.generated.size()), tokens);
  if (r.stop == graph::StopReason::cancelled) raise(CKJIT_ERR_CANCELLED, "generation was aborted (abort callback)");
  if (r.generated.size() > capacity && tokens)
    raise(CKJIT_ERR_BUFFER_TOO_SMALL, std::to_string(r.generated.size()) + " tokens generated, capacity " + std::to_string(capacity) +
                                          " (the session holds all of them)");
  return CKJIT_OK;
}

}  // namespace

extern "C" {

ckjit_status ckjit_generate(ckjit_session* session, const ckjit_generate_params* given, int32_t* tokens, size_t capacity,
                            size_t* n_generated) {
  if (n_generated) *n_generated = 0;
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* s = session_of(session);
    if (capacity > 0) need(tokens, "tokens");
    SessionRun run;
    setup_run(run, s, given);
    graph::GenerateResult r;
    try {
      r = s->ctx->generate(render_pending(s, run.p), run.go, run.cb);
    } catch (...) {
      s->clear_prompt();  // the pending prompt is spent either way
      throw;
    }
    s->clear_prompt();
    return finish_run(s, r, tokens, capacity, n_generated);
  });
}

ckjit_status ckjit_generate_batch(ckjit_session* const* sessions, const ckjit_generate_params* const* params, size_t n,
                                  ckjit_status* status, size_t* n_generated) {
  for (size_t i = 0; status && i < n; ++i) status[i] = CKJIT_ERR_INVALID_ARGUMENT;
  for (size_t i = 0; n_generated && i < n; ++i) n_generated[i] = 0;
  capi::ErrorSlot* slot = n > 0 && sessions ? slot_of(sessions[0]) : nullptr;
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    if (n == 0) raise(CKJIT_ERR_INVALID_ARGUMENT, "no sessions (n is 0)");
    need(sessions, "sessions");
    std::vector<SessionRun> runs(n);
    std::vector<pair::TogetherItem> items;
    std::vector<size_t> item_of;  // runs[i] -> its item, or n when it could not start
    ckjit_status first = CKJIT_OK;
    std::string first_msg;
    auto fail_one = [&](size_t i, ckjit_status st, const std::string& msg) {
      if (status) status[i] = st;
      sessions[i]->error.set(msg);
      if (first == CKJIT_OK) first = st, first_msg = "session " + std::to_string(i) + ": " + msg;
    };
    for (size_t i = 0; i < n; ++i) {
      ckjit_session* s = session_of(sessions[i]);  // a bad handle fails the whole call
      if (s->core != sessions[0]->core) raise(CKJIT_ERR_INVALID_ARGUMENT, "the sessions are of different models");
      for (size_t j = 0; j < i; ++j)
        if (sessions[j] == s) raise(CKJIT_ERR_INVALID_ARGUMENT, "session " + std::to_string(i) + " is listed twice");
    }
    for (size_t i = 0; i < n; ++i) {
      ckjit_session* s = sessions[i];
      const ckjit_status st = guarded(nullptr, CKJIT_ERR_INVALID_ARGUMENT, [&] {
        setup_run(runs[i], s, params ? params[i] : nullptr);
        runs[i].prompt = render_pending(s, runs[i].p);
        return CKJIT_OK;
      });
      if (st != CKJIT_OK) {
        fail_one(i, st, capi::thread_last_error());
        s->clear_prompt();
        item_of.push_back(n);
        continue;
      }
      item_of.push_back(items.size());
      items.push_back({s->ctx.get(), &runs[i].prompt, &runs[i].go, &runs[i].cb});
    }
    std::vector<pair::TogetherOutcome> outs;
    if (!items.empty()) {
      try {
        outs = pair::generate_together(items);
      } catch (...) {
        for (size_t i = 0; i < n; ++i) sessions[i]->clear_prompt();
        throw;
      }
    }
    for (size_t i = 0; i < n; ++i) {
      if (item_of[i] == n) continue;
      ckjit_session* s = sessions[i];
      s->clear_prompt();
      const pair::TogetherOutcome& o = outs[item_of[i]];
      if (o.error) {
        const ckjit_status st = guarded(nullptr, CKJIT_ERR_INVALID_ARGUMENT, [&]() -> ckjit_status { std::rethrow_exception(o.error); });
        fail_one(i, st, capi::thread_last_error());
        continue;
      }
      record_run(s, o.result);
      if (n_generated) n_generated[i] = o.result.generated.size();
      if (o.result.stop == graph::StopReason::cancelled) {
        fail_one(i, CKJIT_ERR_CANCELLED, "generation was aborted (abort callback)");
        continue;
      }
      if (status) status[i] = CKJIT_OK;
    }
    if (first != CKJIT_OK) raise(first, first_msg);
    return CKJIT_OK;
  });
}

ckjit_status ckjit_batcher_new(ckjit_model* model, int32_t max_sessions, int32_t n_threads, ckjit_batcher** out) {
  if (out) *out = nullptr;
  capi::ErrorSlot* slot = slot_of(model);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    need(out, "out");
    ckjit_model* m = model_of(model);
    if (max_sessions < 1) raise(CKJIT_ERR_INVALID_ARGUMENT, "max_sessions must be at least 1");
    if (n_threads < 0) raise(CKJIT_ERR_INVALID_ARGUMENT, "n_threads must not be negative");
    auto b = std::make_unique<ckjit_batcher>();
    b->core = m->core;
    b->batcher = std::make_unique<pair::Batcher>(m->core->pair, max_sessions, n_threads ? n_threads : m->core->pair->threads());
    capi::register_handle(b.get(), Kind::batcher);
    *out = b.release();
    return CKJIT_OK;
  });
}

void ckjit_batcher_free(ckjit_batcher* b) {
  if (!b || !capi::take_handle(b, Kind::batcher)) return;
  delete b;
}

ckjit_status ckjit_batcher_generate(ckjit_batcher* batcher, ckjit_session* session, const ckjit_generate_params* given,
                                    int32_t* tokens, size_t capacity, size_t* n_generated) {
  if (n_generated) *n_generated = 0;
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* s = session_of(session);
    if (!batcher) raise(CKJIT_ERR_INVALID_ARGUMENT, "the batcher handle is NULL");
    if (!capi::live_handle(batcher, Kind::batcher)) raise(CKJIT_ERR_BAD_HANDLE, "not a live batcher handle (freed, or not from ckjit_batcher_new)");
    if (batcher->core != s->core) raise(CKJIT_ERR_INVALID_ARGUMENT, "the session is of another model than the batcher");
    if (capacity > 0) need(tokens, "tokens");
    SessionRun run;
    setup_run(run, s, given);
    graph::GenerateResult r;
    try {
      run.prompt = render_pending(s, run.p);
      r = batcher->batcher->generate(*s->ctx, run.prompt, run.go, run.cb);
    } catch (...) {
      s->clear_prompt();
      throw;
    }
    s->clear_prompt();
    return finish_run(s, r, tokens, capacity, n_generated);
  });
}

const float* ckjit_session_logits(const ckjit_session* s, int32_t* n_vocab) {
  if (n_vocab) *n_vocab = 0;
  if (!s || !capi::live_handle(s, Kind::session) || s->logits.empty()) return nullptr;
  if (n_vocab) *n_vocab = int32_t(s->logits.size());
  return s->logits.data();
}

ckjit_stop_reason ckjit_session_stop_reason(const ckjit_session* s) {
  if (!s || !capi::live_handle(s, Kind::session)) return CKJIT_STOP_NONE;
  return s->last_stop;
}

int64_t ckjit_session_cached_rows(const ckjit_session* s) {
  if (!s || !capi::live_handle(s, Kind::session)) return 0;
  return s->ctx->reused_rows();
}

ckjit_status ckjit_session_timings(const ckjit_session* session, ckjit_timings* out) {
  capi::ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    const ckjit_session* s = session_of(session);
    need(out, "out");
    const uint32_t size = out->struct_size;
    if (size < sizeof(uint32_t) || size > sizeof(ckjit_timings))
      raise(CKJIT_ERR_INVALID_ARGUMENT, "out->struct_size is " + std::to_string(size) + ", not sizeof(ckjit_timings) = " +
                                            std::to_string(sizeof(ckjit_timings)) + " (ckjit_timings_init sets it)");
    ckjit_timings t = s->timings;
    t.struct_size = size;
    std::memcpy(out, &t, size);
    return CKJIT_OK;
  });
}

}  // extern "C"
