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
  std::string text = p.text;
  if (p.chat) {
    std::vector<tok::ChatMessage> msgs;
    if (p.system) msgs.push_back({"system", *p.system, std::nullopt});
    msgs.push_back({"user", text, std::nullopt});
    tok::ChatOptions co;
    if (file.has("tokenizer.chat_template")) co.style = tok::chat_style_from_template(file.get_string("tokenizer.chat_template"));
    text = tok::render_chat(msgs, co);
  }
  return tok.encode(text, /*add_special=*/true, /*parse_special=*/true);
}

GenerateResult generate(Session& s, const tok::Tokenizer& tok, const std::vector<int32_t>& prompt,
                        const GenerateOptions& o, const GenerateCallbacks& cb) {
  const int64_t V = s.model().hparams().n_vocab;
  if (prompt.empty()) throw Error("the prompt is empty (give -p TEXT or -f FILE)");
  if (s.n_past() + int64_t(prompt.size()) >= s.n_ctx())
    throw Error("the prompt is " + std::to_string(prompt.size()) + " tokens, longer than the context (" +
                std::to_string(s.n_ctx()) + "; raise -c)");
  for (int32_t id : o.forced)
    if (id < 0 || id >= V) throw Error("--force: token id " + std::to_string(id) + " is outside the vocabulary");
  Sampler sampler(o.sampler, int32_t(V));
  for (int32_t id : prompt) sampler.accept(id);

  GenerateResult r;
  r.n_prompt = int64_t(prompt.size());
  const auto t_prefill = Clock::now();
  Logits lg = s.decode(Batch::text(prompt, s.next_position()));
  r.prefill_ms = ms_since(t_prefill);
  const float* logits = lg.last();

  const int n_steps = o.forced.empty() ? o.n_predict : int(o.forced.size());
  tok::Utf8Stream out;
  r.generated.reserve(size_t(std::max(0, n_steps)));
  Batch step;
  for (int i = 0; i < n_steps; ++i) {
    if (cb.on_logits) cb.on_logits(logits, V);
    const int32_t id = o.forced.empty() ? sampler.sample(logits) : o.forced[size_t(i)];
    const bool eog = tok.is_eog(id);
    r.generated.push_back(id);
    if ((!eog || !o.forced.empty()) && cb.on_text) cb.on_text(out.push(tok.token_to_piece(id, /*special=*/true)));
    if (o.forced.empty() && eog && !o.ignore_eos) break;
    if (i == n_steps - 1) break;
    if (s.n_past() >= s.n_ctx()) {
      r.context_full = true;
      break;
    }
    sampler.accept(id);
    const auto t = Clock::now();
    step.clear();
    step.add_token(id, Position::text(s.next_position()), true);
    logits = s.decode(step).last();
    r.decode_ms += ms_since(t);
    ++r.n_decoded;
  }
  if (cb.on_text) cb.on_text(out.flush());
  return r;
}

std::string timing_line(const GenerateResult& r, double load_ms, int threads) {
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  char buf[360];
  std::snprintf(buf, sizeof buf,
                "timing: load %.0f ms | prefill %lld tok %.1f ms (%.2f tok/s) | decode %d tok %.1f ms (%.2f tok/s) | threads %d | peak RSS %.0f MiB",
                load_ms, (long long)r.n_prompt, r.prefill_ms, r.n_prompt / r.prefill_ms * 1e3, r.n_decoded, r.decode_ms,
                r.n_decoded ? r.n_decoded / r.decode_ms * 1e3 : 0.0, threads, double(ru.ru_maxrss) / 1024.0);
  return buf;
}

}  // namespace ckjit::graph
