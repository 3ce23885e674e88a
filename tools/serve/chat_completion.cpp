#include "tools/serve/chat_completion.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <iterator>
#include <memory>
#include <random>

#include "tools/serve/openai_response.h"
#include "tools/serve/peer_watch.h"
#include "tools/serve/server_state.h"

namespace ckjit::serve {

namespace {

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

void send_error(httplib::Response& res, int status, const std::string& code, const std::string& message) {
  res.status = status;
  if (status == 503) res.set_header("Retry-After", "1");  // busy or shutting down: another try, or another replica
  res.set_content(error_json(message, error_type_for(status), code).dump(), "application/json");
}

// Renders the messages in the model's chat template (images at their markers).
std::string render(const ServerState& st, const ChatRequest& r) {
  std::vector<ckjit_chat_message> msgs;
  for (const ChatMessage& m : r.messages) msgs.push_back(CKJIT_CHAT_MESSAGE(m.role.c_str(), m.content.c_str()));
  size_t need = 0;
  std::string buf(4096, '\0');
  ckjit_status s = ckjit_chat_render(st.model, msgs.data(), msgs.size(), 1, buf.data(), buf.size(), &need);
  if (s == CKJIT_ERR_BUFFER_TOO_SMALL) {
    buf.assign(need, '\0');
    s = ckjit_chat_render(st.model, msgs.data(), msgs.size(), 1, buf.data(), buf.size(), &need);
  }
  if (s != CKJIT_OK) throw HttpError(400, "invalid_request_error", "invalid_request", ckjit_last_error());
  buf.resize(need - 1);
  return buf;
}

// A request's prompt as rendered once: the text, its images' cache keys (hashed once), and what
// a session holds after it (keys and text), for choosing the session of the next request.
struct RenderedRequest {
  std::string scope;  // --no-cache-sharing: what the keys and the signature start with
  std::string prompt;
  std::vector<std::string> image_keys;
  std::string signature;
};

// With --no-cache-sharing every key and signature starts with the request's scope: its 'user', or
// for a request without one a scope of its own (nothing it leaves is found by another request).
RenderedRequest render_request(const ChatRequest& r, std::string prompt, bool scoped) {
  RenderedRequest out;
  if (scoped) {
    static std::atomic<uint64_t> anonymous{0};
    // The user's length first: no name can end where another's scope would.
    out.scope = (r.user.empty() ? "\x1d#" + std::to_string(anonymous.fetch_add(1))
                                : "\x1du" + std::to_string(r.user.size()) + ":" + r.user) + '\x1e';
    out.signature = out.scope;
  }
  for (const std::string& bytes : r.images) {
    out.image_keys.push_back(out.scope + image_key(bytes, r.image_min_tokens, r.image_max_tokens));
    out.signature += out.image_keys.back() + '\x1f';
  }
  out.signature += prompt;
  out.prompt = std::move(prompt);
  return out;
}

// What one generation sends on as it goes: choice `index`'s text once it is final (no stop string
// can start in it) and the log probabilities of the tokens that text completes; false: the client is gone.
using Emit = std::function<bool(int index, const std::string& piece, const std::vector<TokenLogprob>& logprobs)>;

// How a request ended: its choices and usage.
struct Outcome {
  std::vector<Choice> choices;
  Usage usage;
  bool client_gone = false;
};

// One choice's tokens on their way out: through the stop strings, with their logprobs held until
// their text is sent (a stop string drops the tokens after it).
struct TokenSink {
  TokenSink(StopMatcher stop, const Emit& emit, const std::atomic<bool>& stopping) : stop(std::move(stop)), emit(&emit), stopping(&stopping) {}
  StopMatcher stop;
  const Emit* emit;
  const std::atomic<bool>* stopping;
  int index = 0;
  ckjit_session* session = nullptr;
  const ckjit_model* model = nullptr;
  bool logprobs = false, ignore_eos = false;
  int top_logprobs = 0;
  size_t generated_bytes = 0;        // of the tokens' text, before stop strings cut it
  std::vector<TokenLogprob> held;    // tokens whose text is not all sent yet
  std::vector<TokenLogprob> all;     // the choice's, in order
  std::string content;
  bool gone = false;

  // The held tokens whose text the content now holds (at the end: all); after a stop string, those
  // that began before it (the rest are dropped).
  std::vector<TokenLogprob> release(bool at_end) {
    auto sent = [&](const TokenLogprob& t) { return stop.hit() ? t.text_start < content.size() : at_end || t.text_end <= content.size(); };
    size_t k = 0;
    while (k < held.size() && sent(held[k])) ++k;
    std::vector<TokenLogprob> out(std::make_move_iterator(held.begin()), std::make_move_iterator(held.begin() + ptrdiff_t(k)));
    held.erase(held.begin(), held.begin() + ptrdiff_t(k));
    if (stop.hit()) held.clear();
    all.insert(all.end(), out.begin(), out.end());
    return out;
  }

  void send(const std::string& piece, bool at_end = false) {
    content += piece;
    const std::vector<TokenLogprob> ready = release(at_end);
    if ((!piece.empty() || !ready.empty()) && !gone && !(*emit)(index, piece, ready)) gone = true;
  }
};

int on_token(int32_t id, const char* text, void* user) {
  auto* t = static_cast<TokenSink*>(user);
  const size_t n = std::strlen(text);
  if (t->logprobs && (t->ignore_eos || !ckjit_token_is_eog(t->model, id))) {
    int32_t n_vocab = 0;
    const float* logits = ckjit_session_logits(t->session, &n_vocab);  // the ones this token was drawn from
    if (logits) {
      TokenLogprob lp = token_logprob(t->model, logits, n_vocab, id, t->top_logprobs);
      lp.text_start = t->generated_bytes, lp.text_end = t->generated_bytes + n;
      t->held.push_back(std::move(lp));
    }
  }
  t->generated_bytes += n;
  t->send(t->stop.push(text));
  return t->gone || t->stop.hit() || t->stopping->load() ? 1 : 0;
}

// The request's images as encoded rows (from the cache, else encoded now and cached), once for all
// its choices; HttpError for a broken or too large image.
std::vector<std::shared_ptr<EncodedImage>> encode_images(ServerState& st, ckjit_session* s, const ChatRequest& r, const RenderedRequest& rr) {
  std::vector<std::shared_ptr<EncodedImage>> out;
  for (size_t i = 0; i < r.images.size(); ++i) {
    const std::string& bytes = r.images[i];
    std::shared_ptr<EncodedImage> im = st.cache->get(rr.image_keys[i]);
    if (!im) {
      ckjit_image* h = nullptr;
      const ckjit_status es = ckjit_image_encode_bytes_limits(s, bytes.data(), bytes.size(), r.image_min_tokens, r.image_max_tokens, &h);
      if (es != CKJIT_OK) {
        const std::string msg = "image " + std::to_string(i + 1) + ": " + ckjit_session_last_error(s);
        if (es == CKJIT_ERR_OUT_OF_MEMORY) throw HttpError(413, "invalid_request_error", "image_too_large", msg);
        throw HttpError(400, "invalid_request_error", "invalid_image", msg);
      }
      im = std::make_shared<EncodedImage>(h);
      st.cache->put(rr.image_keys[i], im);
    }
    out.push_back(std::move(im));
  }
  return out;
}

struct ChoiceRun {
  Choice choice;
  Usage usage;
  bool client_gone = false;
};

// Choice `index` on a leased session; the prompt rows of an earlier choice of the request are kept.
ChoiceRun generate_choice(ServerState& st, ckjit_session* s, const ChatRequest& r, const RenderedRequest& rr,
                          const std::vector<std::shared_ptr<EncodedImage>>& images, int index, const Emit& emit) {
  ckjit_timings before;
  ckjit_timings_init(&before);
  ckjit_session_timings(s, &before);
  for (const auto& im : images)
    if (ckjit_session_add_image(s, im->handle) != CKJIT_OK) throw HttpError(500, "server_error", "internal", ckjit_session_last_error(s));
  if (ckjit_session_add_text(s, rr.prompt.c_str()) != CKJIT_OK) throw HttpError(500, "server_error", "internal", ckjit_session_last_error(s));
  TokenSink sink(StopMatcher(r.stop), emit, st.stopping);
  sink.index = index, sink.session = s, sink.model = st.model;
  sink.logprobs = r.logprobs, sink.ignore_eos = r.ignore_eos, sink.top_logprobs = r.top_logprobs;
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = r.max_tokens;
  gp.temp = r.temperature;
  gp.top_p = r.top_p;
  gp.top_k = r.top_k;
  gp.min_p = r.min_p;
  gp.repeat_penalty = r.repeat_penalty;
  gp.repeat_last_n = r.repeat_last_n;
  gp.frequency_penalty = r.frequency_penalty;
  gp.presence_penalty = r.presence_penalty;
  std::vector<ckjit_logit_bias> bias;
  for (const auto& [id, b] : r.logit_bias) bias.push_back({id, b});
  gp.logit_bias = bias.data();
  gp.n_logit_bias = bias.size();
  gp.ignore_eos = r.ignore_eos ? 1 : 0;
  // Choice i draws with seed + i: n choices of a seeded request are n requests with those seeds.
  gp.seed = r.seed ? *r.seed + uint64_t(index) : std::random_device{}();
  gp.on_token = on_token;
  gp.user_data = &sink;
  // Several choices share the prompt's rows: after complete_on's reset there is nothing stale to
  // reuse, and choice 0 is rendered so that the later ones find its rows.
  gp.cache_prompt = r.cache_prompt || r.n > 1 ? 1 : 0;
  gp.json_schema = r.json_schema ? r.json_schema->c_str() : nullptr;
  gp.grammar = r.grammar ? r.grammar->c_str() : nullptr;
  size_t n = 0;
  // With several sessions, through the batcher: every running request's decode step in one pass
  // (the same tokens as alone); on_token then runs on the batcher's thread while this one waits.
  const ckjit_status gs = st.batcher ? ckjit_batcher_generate(st.batcher, s, &gp, nullptr, 0, &n) : ckjit_generate(s, &gp, nullptr, 0, &n);
  ckjit_timings t;
  ckjit_timings_init(&t);
  ckjit_session_timings(s, &t);
  if (t.n_prompt >= before.n_prompt) {  // this choice's share of the session's totals
    t.encode_ms -= before.encode_ms, t.prefill_ms -= before.prefill_ms, t.decode_ms -= before.decode_ms;
    t.n_prompt -= before.n_prompt;
  }
  st.metrics.phases(t.encode_ms / 1e3, t.prefill_ms / 1e3, t.decode_ms / 1e3);
  if (gs == CKJIT_ERR_CONTEXT_FULL)
    throw HttpError(400, "invalid_request_error", "context_length_exceeded", ckjit_session_last_error(s));
  if (gs == CKJIT_ERR_INVALID_ARGUMENT) throw HttpError(400, "invalid_request_error", "invalid_request", ckjit_session_last_error(s));
  if (gs != CKJIT_OK) throw HttpError(500, "server_error", "internal", ckjit_session_last_error(s));
  const ckjit_stop_reason why = ckjit_session_stop_reason(s);
  // A shutdown that cut the answer short is not a finished answer: the client gets an error (a
  // streamed one after the text it already has) and may ask again elsewhere.
  if (why == CKJIT_STOP_CALLBACK && st.stopping && !sink.stop.hit() && !sink.gone)
    throw HttpError(503, "server_error", "shutting_down", "the server shut down during the generation");
  if (!sink.gone) sink.send(sink.stop.flush(), /*at_end=*/true);
  ChoiceRun c;
  c.choice.index = index;
  c.choice.content = std::move(sink.content);
  if (r.logprobs) c.choice.logprobs = std::move(sink.all);
  c.client_gone = sink.gone;
  // "length": max_tokens or the context ran out; "stop": the end-of-generation token or a stop string.
  c.choice.finish_reason = why == CKJIT_STOP_LENGTH || why == CKJIT_STOP_CONTEXT_FULL ? "length" : "stop";
  const int64_t cached = ckjit_session_cached_rows(s);
  // The end-of-generation token is not part of the answer (nor counted in it).
  const int64_t completion = int64_t(n) - (why == CKJIT_STOP_END_OF_GENERATION ? 1 : 0);
  c.usage = {t.n_prompt + cached, completion, cached};
  return c;
}

// Images, prompt and the request's n choices on a leased session; HttpError for what the client got wrong.
Outcome complete_on(ServerState& st, ckjit_session* s, const ChatRequest& r, const RenderedRequest& rr, const Emit& emit, bool reuse) {
  // Without prompt caching the request starts from an empty KV cache; with it, the library keeps
  // what the session's last prompt shares with this one (every request is a whole conversation).
  if (!r.cache_prompt || !reuse) ckjit_session_reset(s);
  const auto images = encode_images(st, s, r, rr);
  Outcome o;
  for (int i = 0; i < r.n && !o.client_gone; ++i) {
    ChoiceRun c = generate_choice(st, s, r, rr, images, i, emit);
    if (i == 0) o.usage = c.usage;  // the prompt counts once (later choices reuse its rows)
    else o.usage.completion_tokens += c.usage.completion_tokens;
    o.choices.push_back(std::move(c.choice));
    o.client_gone = c.client_gone;
  }
  st.metrics.tokens(o.usage.prompt_tokens, o.usage.completion_tokens);
  return o;
}

// complete_on, leaving the session without a half-added prompt when the request fails.
Outcome complete(ServerState& st, Lease& lease, const ChatRequest& r, const RenderedRequest& rr, const Emit& emit) {
  try {
    // --no-cache-sharing: rows another scope left are dropped, never reused.
    const bool reuse = rr.scope.empty() || lease.remembered().rfind(rr.scope, 0) == 0;
    Outcome o = complete_on(st, lease.get(), r, rr, emit, reuse);
    lease.remember(r.cache_prompt ? rr.signature : std::string());
    return o;
  } catch (...) {
    ckjit_session_reset(lease.get());
    lease.remember("");
    throw;
  }
}

// The streamed answer: waits in line (an SSE comment each second, which also tells a gone client),
// then one chunk per piece of text, a last chunk with the finish reason and usage, then [DONE].
void stream(ServerState& st, std::shared_ptr<const ChatRequest> r, std::shared_ptr<const RenderedRequest> rr, httplib::Response& res,
            PeerWatch watch, std::shared_ptr<InFlight> in_flight) {
  // in_flight lives as long as the provider: until the stream is done or dropped.
  res.set_chunked_content_provider("text/event-stream", [&st, r, rr, watch, in_flight](size_t, httplib::DataSink& sink) mutable {
    const CompletionId id = new_completion_id(st.model_name, r->raw_prompt.has_value());
    auto last_ping = Clock::now();
    bool gone = false;
    Lease lease = st.pool->acquire([&] {
      if (st.stopping) return true;
      if (watch.gone()) return gone = true;
      if (Clock::now() - last_ping < std::chrono::seconds(1)) return false;
      last_ping = Clock::now();
      gone = !sink.write(": waiting for a session\n\n", 25);
      return gone;
    }, rr->signature);
    if (!lease) {
      if (!gone) {
        const std::string e = sse(error_json("the server is shutting down", "server_error", "shutting_down"));
        sink.write(e.data(), e.size());
        sink.done();
      }
      return false;
    }
    // Each choice's first chunk carries the role (sent before its first text); pieces as they come.
    std::vector<bool> started(size_t(r->n), false);
    auto role_chunk = [&](int index) -> std::string {
      if (started[size_t(index)]) return "";
      started[size_t(index)] = true;
      return sse(chunk_json(id, {index, std::string(), true, std::nullopt, nullptr}));
    };
    const std::string first = role_chunk(0);
    if (!sink.write(first.data(), first.size())) return false;
    const Emit emit = [&](int index, const std::string& piece, const std::vector<TokenLogprob>& logprobs) {
      const std::string ev = role_chunk(index) + sse(chunk_json(id, {index, piece, false, std::nullopt, r->logprobs ? &logprobs : nullptr}));
      return sink.write(ev.data(), ev.size());
    };
    std::string tail;
    try {
      const Outcome o = complete(st, lease, *r, *rr, emit);
      if (o.client_gone) return false;
      for (const Choice& c : o.choices) tail += role_chunk(c.index) + sse(chunk_json(id, {c.index, std::nullopt, false, c.finish_reason, nullptr}));
      if (r->include_usage) tail += sse(usage_chunk_json(id, o.usage));  // OpenAI's usage-only last chunk
    } catch (const HttpError& e) {
      tail = sse(error_json(e.what(), e.type, e.code));
    } catch (const std::exception& e) {
      tail = sse(internal_error_json(e.what()));
    }
    tail += sse_done();
    if (!sink.write(tail.data(), tail.size())) return false;
    sink.done();
    return true;
  });
}

}  // namespace

namespace {

// Chat (text = false) and text completions: the same checks, sessions and generation; a text
// completion's prompt is used as given and its answer has the legacy text_completion shape.
void handle_completion(ServerState& st, const httplib::Request& req, httplib::Response& res, bool text) {
  auto in_flight = std::make_shared<InFlight>(st);
  try {
    const std::string ctype = req.get_header_value("Content-Type");
    if (ctype.rfind("application/json", 0) != 0)
      throw HttpError(415, "invalid_request_error", "unsupported_media_type",
                      "Content-Type must be application/json (got '" + ctype + "')");
    auto r = std::make_shared<ChatRequest>(text ? parse_completion_request(req.body, st.opt.limits) : parse_chat_request(req.body, st.opt.limits));
    if (r->model && !st.accepts_model(*r->model))
      throw HttpError(404, "invalid_request_error", "model_not_found", "the model '" + *r->model + "' does not exist (this server has '" + st.model_name + "')");
    if (!r->images.empty() && !ckjit_model_has_vision(st.model))
      throw HttpError(400, "invalid_request_error", "no_vision", "this server was started without --mmproj: it cannot read images");
    const std::string prompt = text ? *r->raw_prompt : render(st, *r);
    // The text's tokens (markers count a few each, so this errs high) and the images' rows from
    // their header sizes, before waiting in line or streaming anything.
    size_t n_text = 0;
    ckjit_tokenize(st.model, prompt.c_str(), 1, nullptr, 0, &n_text);
    int64_t n_image_rows = 0;
    for (const auto& [w, h] : r->image_sizes)
      n_image_rows += ckjit_model_image_rows(st.model, w, h, r->image_min_tokens, r->image_max_tokens);
    if (int64_t(n_text) + n_image_rows >= st.n_ctx)
      throw HttpError(400, "invalid_request_error", "context_length_exceeded",
                      "the prompt is " + std::to_string(int64_t(n_text) + n_image_rows) + " tokens (" + std::to_string(n_image_rows) +
                          " of them image rows); the context (-c) is " + std::to_string(st.n_ctx));
    const int32_t n_vocab = ckjit_model_n_vocab(st.model);
    for (const auto& [id, bias] : r->logit_bias)
      if (id >= n_vocab)
        throw HttpError(400, "invalid_request_error", "invalid_request",
                        "'logit_bias' names token " + std::to_string(id) + ", outside the vocabulary (0.." + std::to_string(n_vocab - 1) + ")");
    // A full line is answered at once (a client or load balancer retries) rather than queued without end.
    const int max_queue = st.opt.max_queue > 0 ? st.opt.max_queue : 4 * st.opt.parallel;
    if (st.pool->queued() >= max_queue)
      throw HttpError(503, "server_error", "server_busy",
                      std::to_string(st.pool->queued()) + " requests are already waiting for a session (--max-queue " + std::to_string(max_queue) +
                          "); retry later");
    PeerWatch watch(req.remote_port, req.local_port);
    auto rr = std::make_shared<const RenderedRequest>(render_request(*r, prompt, st.opt.no_cache_sharing));
    if (r->stream) return stream(st, r, rr, res, watch, in_flight);
    Lease lease = st.pool->acquire([&] { return st.stopping || watch.gone(); }, rr->signature);
    if (!lease) {
      if (watch.gone()) {
        res.status = 499;  // nginx's "client closed request": nobody reads it, /metrics counts it
        return;
      }
      throw HttpError(503, "server_error", "shutting_down", "the server is shutting down");
    }
    const CompletionId id = new_completion_id(st.model_name, text);
    // Nothing is written until the end: the client's socket is looked at every few pieces instead.
    int pieces = 0;
    const Outcome o = complete(st, lease, *r, *rr, [&](int, const std::string&, const std::vector<TokenLogprob>&) { return ++pieces % 4 != 0 || !watch.gone(); });
    if (o.client_gone) {
      res.status = 499;
      return;
    }
    res.set_content(completion_json(id, o.choices, o.usage).dump(-1, ' ', false, json::error_handler_t::replace),
                    "application/json");
  } catch (const HttpError& e) {
    send_error(res, e.status, e.code, e.what());
  }
}

}  // namespace

void handle_chat_completion(ServerState& st, const httplib::Request& req, httplib::Response& res) { handle_completion(st, req, res, false); }
void handle_text_completion(ServerState& st, const httplib::Request& req, httplib::Response& res) { handle_completion(st, req, res, true); }

}  // namespace ckjit::serve
