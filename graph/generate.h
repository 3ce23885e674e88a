#pragma once
// The text prompt loop of `ckjit run` as a library: the prompt (plain, or one user turn in the
// model's chat template) tokenized, prefilled as one batch (in n_ubatch chunks), then decode steps
// that sample (or take forced ids, teacher forcing) until n_predict tokens, an end-of-generation
// token or a full context. Text streams to a callback as whole UTF-8 characters; the logits that
// chose each token can be observed (--dump-logits). The CLI only parses flags and prints.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/bridge.h"
#include "graph/session.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/sampler.h"
#include "runtime/structured/token_constraint.h"
#include "runtime/tokenizer/tokenizer.h"
#include "runtime/tokenizer/utf8_stream.h"

namespace ckjit::graph {

struct PromptOptions {
  std::string text;
  bool chat = false;                   // wrap in the model's chat template (one user turn)
  std::optional<std::string> system;   // system message (with chat)
};
// The prompt's token ids as llama.cpp tokenizes it (special tokens parsed; the template style read
// from the file's tokenizer.chat_template when present).
std::vector<int32_t> prompt_tokens(const tok::Tokenizer& tok, const gguf::GgufFile& file, const PromptOptions& p);
// The prompt text before tokenizing: the chat template applied when asked (media markers pass through).
std::string prompt_text(const gguf::GgufFile& file, const PromptOptions& p);

// The one "does it fit" rule: Error context_full when `rows` more rows do not fit behind what the
// session holds (a slot stays free for the first generated token). `what` says it ("the
// prompt is 9 rows, longer than the context"), `remedy` says what to change ("raise $n_ctx").
void require_room(const Session& s, int64_t rows, const std::string& what, const std::string& remedy);

struct GenerateOptions {
  int n_predict = 256;
  std::vector<int32_t> forced;  // teacher forcing: feed these ids instead of sampling (n_predict ignored)
  bool ignore_eos = false;
  SamplerParams sampler;
  // Structured output: every sampled token keeps the text inside this grammar, and generation
  // may end only where the text is complete (null: free text). Forced ids are not checked.
  std::shared_ptr<const structured::Grammar> grammar;
};

// Why a stream's generation ended: n_predict reached, an end-of-generation token (counted in
// generated), on_token's false, the context full, or cancelled (graph::Scheduler).
enum class StopReason { none, length, end_of_generation, callback, context_full, cancelled };

struct GenerateResult {
  std::vector<int32_t> generated;
  int64_t n_prompt = 0;
  int n_decoded = 0;
  double prefill_ms = 0, decode_ms = 0;
  int64_t n_image_rows = 0;           // of n_prompt: rows that came from images
  double image_prefill_ms = 0;        // of prefill_ms: spent on the image segments
  StopReason stop = StopReason::none;
};

struct GenerateCallbacks {
  std::function<void(const std::string&)> on_text;             // decoded text, whole characters
  std::function<void(const float* logits, int64_t n_vocab)> on_logits;  // the logits each token was chosen from
  // Each generated token and the whole UTF-8 characters it completes; false: stop after it.
  std::function<bool(int32_t id, const std::string& text)> on_token;
};

// One stream's generation after its prompt: chooses each next token from the logits it is
// sampled from (or takes the forced ids), streams its text, applies the stop rules (n_predict, an
// end-of-generation token, on_token's false, a full context). generate() and graph::Scheduler both
// run it, so a stream stops and streams alike alone or batched.
class TokenLoop {
 public:
  // accepted: the prompt's token ids the sampler's repetition penalty sees.
  TokenLoop(const Session& s, const tok::Tokenizer& tok, const GenerateOptions& o, const GenerateCallbacks& cb,
            GenerateResult& r, const std::vector<int32_t>& accepted);
  // The id to decode next after these logits, or -1 when the stream ends here (its last text
  // flushed); the caller decodes the id and counts the step in the result (n_decoded, decode_ms).
  int32_t next(const float* logits);

 private:
  int32_t choose(const float* logits);  // sampled (the grammar's mask only when the draw is refused) or forced
  const Session& s_;
  const tok::Tokenizer& tok_;
  const GenerateOptions& o_;
  const GenerateCallbacks& cb_;
  GenerateResult& r_;
  Sampler sampler_;
  std::optional<structured::TokenConstraint> constraint_;
  tok::Utf8Stream out_;
  int n_steps_, i_ = 0;
  bool done_ = false;
};

// Errors for a prompt of `rows` rows that cannot run on s: empty, longer than the context, forced
// ids outside the vocabulary.
void check_prompt(const Session& s, int64_t rows, const GenerateOptions& o);

// Runs the prompt on an empty or continuing session. Errors: empty prompt, prompt longer than the
// context, forced ids outside the vocabulary.
GenerateResult generate(Session& s, const tok::Tokenizer& tok, const std::vector<int32_t>& prompt,
                        const GenerateOptions& o, const GenerateCallbacks& cb);

// The bridge's mixed prompt (text runs and image rows, spec D.4): each segment is prefilled as
// its own batch (in n_ubatch chunks; never as decode steps) so the image rows' prefill time is
// known, then decoding continues from the KV cache. Errors: as above, plus a prompt that does not
// end with text.
GenerateResult generate(Session& s, const tok::Tokenizer& tok, const BridgePrompt& prompt, const GenerateOptions& o,
                        const GenerateCallbacks& cb);

// "timing: load ... | prefill N tok ... | decode N tok ... | threads T | peak RSS M MiB"
std::string timing_line(const GenerateResult& r, double load_ms, int threads);

}  // namespace ckjit::graph
