#include "graph/generate.h"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>

#include "runtime/error.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/utf8_stream.h"

namespace ckjit::graph {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

std::vector<int32_t> prompt_tokens(const tok::Tokenizer& tok, const gguf::GgufFile& file, const PromptOptions& p) {
  return tok.encode(prompt_text(file, p), /*add_special=*/true, /*parse_special=*/true);
}

std::string prompt_text(const gguf::GgufFile& file, const PromptOptions& p) {
  std::string text = p.text;
  if (p.chat) {
    std::vector<tok::ChatMessage> msgs;
    if (p.system) msgs.push_back({"system", *p.system, std::nullopt});
    msgs.push_back({"user", text, std::nullopt});
    tok::ChatOptions co;
    if (file.has("tokenizer.chat_template")) co.style = tok::chat_style_from_template(file.get_string("tokenizer.chat_template"));
    text = tok::render_chat(msgs, co);
  }
  return text;
}

void require_room(const Session& s, int64_t rows, const std::string& what, const std::string& remedy) {
  if (s.n_past() + rows < s.n_ctx()) return;
  const std::string used = s.n_past() ? ", " + std::to_string(s.n_past()) + " rows in use" : "";
  throw Error(what + " (" + std::to_string(s.n_ctx()) + used + "; " + remedy + ")", ErrorKind::context_full);
}

void check_prompt(const Session& s, int64_t rows, const GenerateOptions& o) {
  const int64_t V = s.model().hparams().n_vocab;
  if (rows == 0) throw Error("the prompt is empty (give $prompt)", ErrorKind::invalid_argument);
  require_room(s, rows, "the prompt is " + std::to_string(rows) + " rows, longer than the context", "raise $n_ctx");
  for (int32_t id : o.forced)
    if (id < 0 || id >= V) throw Error("$forced: token id " + std::to_string(id) + " is outside the vocabulary", ErrorKind::invalid_argument);
}

TokenLoop::TokenLoop(const Session& s, const tok::Tokenizer& tok, const GenerateOptions& o, const GenerateCallbacks& cb,
                     GenerateResult& r, const std::vector<int32_t>& accepted)
    : s_(s), tok_(tok), o_(o), cb_(cb), r_(r), sampler_(o.sampler, int32_t(s.model().hparams().n_vocab)),
      n_steps_(o.forced.empty() ? o.n_predict : int(o.forced.size())) {
  for (int32_t id : accepted)
    if (id >= 0) sampler_.accept(id);
  r_.generated.reserve(size_t(std::max(0, n_steps_)));
  if (o.grammar && o.forced.empty()) constraint_.emplace(*o.grammar);
}

int32_t TokenLoop::choose(const float* logits) {
  if (!o_.forced.empty()) return o_.forced[size_t(i_)];
  const int32_t id = sampler_.sample(logits);
  if (!constraint_ || constraint_->allows(id)) return id;
  return sampler_.sample(logits, constraint_->allowed().data());
}

int32_t TokenLoop::next(const float* logits) {
  if (done_) return -1;
  auto end = [&](StopReason why) {
    done_ = true;
    r_.stop = why;
    if (cb_.on_text) cb_.on_text(out_.flush());
    return int32_t(-1);
  };
  if (i_ >= n_steps_) return end(StopReason::length);
  const int64_t V = s_.model().hparams().n_vocab;
  if (cb_.on_logits) cb_.on_logits(logits, V);
  const int32_t id = choose(logits);
  const bool eog = tok_.is_eog(id);
  if (constraint_) constraint_->accept(id);
  r_.generated.push_back(id);
  std::string text;
  if ((!eog || !o_.forced.empty()) && (cb_.on_text || cb_.on_token)) text = out_.push(tok_.token_to_piece(id, /*special=*/true));
  if ((!eog || !o_.forced.empty()) && cb_.on_text) cb_.on_text(text);
  const bool stops_here = o_.forced.empty() && eog && !o_.ignore_eos;
  if (cb_.on_token && !cb_.on_token(id, text)) return end(stops_here ? StopReason::end_of_generation : StopReason::callback);
  if (stops_here) return end(StopReason::end_of_generation);
  if (i_ == n_steps_ - 1) return end(StopReason::length);
  if (s_.n_past() >= s_.n_ctx()) return end(StopReason::context_full);
  sampler_.accept(id);
  ++i_;
  return id;
}

namespace {

// Sampling (or forcing) from the prompt's last logits on; fills generated / decode fields of r.
void decode_loop(Session& s, TokenLoop& loop, const float* logits, GenerateResult& r) {
  Batch step;
  if (s.profile()) s.profile()->set_phase(Phase::decode);
  for (int32_t id = loop.next(logits); id >= 0; id = loop.next(logits)) {
    const auto t = Clock::now();
    step.clear();
    step.add_token(id, Position::text(s.next_position()), true);
    logits = s.decode(step).last();
    r.decode_ms += ms_since(t);
    ++r.n_decoded;
  }
}

}  // namespace

GenerateResult generate(Session& s, const tok::Tokenizer& tok, const std::vector<int32_t>& prompt,
                        const GenerateOptions& o, const GenerateCallbacks& cb) {
  check_prompt(s, int64_t(prompt.size()), o);
  GenerateResult r;
  TokenLoop loop(s, tok, o, cb, r, prompt);
  r.n_prompt = int64_t(prompt.size());
  if (s.profile()) s.profile()->set_phase(Phase::text_prefill);
  const auto t_prefill = Clock::now();
  Logits lg = s.decode(Batch::text(prompt, s.next_position()));
  r.prefill_ms = ms_since(t_prefill);
  decode_loop(s, loop, lg.last(), r);
  return r;
}

GenerateResult generate(Session& s, const tok::Tokenizer& tok, const BridgePrompt& prompt, const GenerateOptions& o,
                        const GenerateCallbacks& cb) {
  const Batch& b = prompt.batch;
  check_prompt(s, b.size(), o);
  if (prompt.segments.empty() || prompt.segments.back().image) throw Error("the prompt must end with text");
  GenerateResult r;
  TokenLoop loop(s, tok, o, cb, r, prompt.token_ids);
  r.n_prompt = b.size();
  const float* last = nullptr;
  Batch part;
  for (size_t si = 0; si < prompt.segments.size(); ++si) {
    const BridgeSegment& seg = prompt.segments[si];
    part.clear();
    for (int64_t i = seg.first_row; i < seg.first_row + seg.n_rows; ++i) {
      const bool want = si + 1 == prompt.segments.size() && i + 1 == seg.first_row + seg.n_rows;
      if (b.token[size_t(i)] >= 0) part.add_token(b.token[size_t(i)], b.pos[size_t(i)], want);
      else part.add_embedding(b.embd[size_t(i)], b.pos[size_t(i)], b.deepstack[size_t(i)], want);
    }
    if (s.profile()) s.profile()->set_phase(seg.image ? Phase::image_prefill : Phase::text_prefill);
    const auto t = Clock::now();
    Logits lg = s.decode(part);
    const double ms = ms_since(t);
    r.prefill_ms += ms;
    if (seg.image) r.image_prefill_ms += ms, r.n_image_rows += seg.n_rows;
    if (lg.rows > 0) last = lg.last();
  }
  decode_loop(s, loop, last, r);
  return r;
}

std::string timing_line(const GenerateResult& r, double load_ms, int threads) {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  char img[160] = "";
  if (r.n_image_rows > 0)
    std::snprintf(img, sizeof img, " [image %lld rows %.1f ms, text %lld rows %.1f ms]", (long long)r.n_image_rows,
                  r.image_prefill_ms, (long long)(r.n_prompt - r.n_image_rows), r.prefill_ms - r.image_prefill_ms);
  char buf[520];
  std::snprintf(buf, sizeof buf,
                "timing: load %.0f ms | prefill %lld tok %.1f ms (%.2f tok/s)%s | decode %d tok %.1f ms (%.2f tok/s) | threads %d | peak RSS %.0f MiB",
                load_ms, (long long)r.n_prompt, r.prefill_ms, r.n_prompt / r.prefill_ms * 1e3, img, r.n_decoded, r.decode_ms,
                r.n_decoded ? r.n_decoded / r.decode_ms * 1e3 : 0.0, threads, double(ru.ru_maxrss) / 1024.0);
  return buf;
}

}  // namespace ckjit::graph
