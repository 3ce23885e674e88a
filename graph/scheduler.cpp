#include "graph/scheduler.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "runtime/error.h"

namespace ckjit::graph {

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

// A stream: its session, its prompt cut into the chunks generate() would run, then its TokenLoop.
struct Scheduler::Stream {
  Session* s = nullptr;
  const GenerateOptions* o = nullptr;
  const GenerateCallbacks* cb = nullptr;
  Batch rows;                                   // the prompt's rows (embedding rows borrowed)
  std::vector<std::pair<int64_t, bool>> chunks; // (rows in the chunk, from an image segment), in order
  size_t next_chunk = 0;
  int64_t next_row = 0;
  std::vector<int32_t> accepted;                // the prompt ids the sampler sees
  GenerateResult r;
  std::unique_ptr<TokenLoop> loop;              // once the prompt is in
  std::vector<float> logits;                    // the logits the next token is chosen from
  int32_t pending = -1;                         // the id to decode this step
  bool finished = false;
  bool prefilling() const { return !finished && next_chunk < chunks.size(); }
  bool generating() const { return !finished && loop != nullptr; }
};

Scheduler::Scheduler(const TextModel& model, const tok::Tokenizer& tok, int64_t max_streams, int64_t att_scratch_per_worker,
                     Workers& pool)
    : model_(model), tok_(tok), pool_(pool), max_streams_(max_streams), att_scratch_(att_scratch_per_worker),
      decoder_(model, max_streams, att_scratch_per_worker, pool) {}

Scheduler::~Scheduler() = default;

int Scheduler::add_stream(std::unique_ptr<Stream> st) {
  if (&st->s->model() != &model_) throw Error("scheduler: the session is not on this model", ErrorKind::invalid_argument);
  if (active() >= max_streams_)
    throw Error("scheduler: " + std::to_string(max_streams_) + " streams already run", ErrorKind::invalid_argument);
  if (st->s->attention_scratch_per_worker() > att_scratch_)
    throw Error("scheduler: the session's attention needs more scratch than the scheduler was made for", ErrorKind::invalid_argument);
  for (const auto& other : streams_)
    if (other && !other->finished && other->s == st->s)
      throw Error("scheduler: the session already runs a stream", ErrorKind::invalid_argument);
  check_prompt(*st->s, st->rows.size(), *st->o);
  streams_.push_back(std::move(st));
  return int(streams_.size() - 1);
}

int Scheduler::add(Session& session, const std::vector<int32_t>& prompt, const GenerateOptions& o, const GenerateCallbacks& cb) {
  auto st = std::make_unique<Stream>();
  st->s = &session, st->o = &o, st->cb = &cb;
  st->rows = Batch::text(prompt, session.next_position());
  st->accepted = prompt;
  // generate(): the prompt as one batch, which Session::decode runs in n_ubatch chunks.
  for (int64_t b = 0; b < int64_t(prompt.size()); b += session.options().n_ubatch)
    st->chunks.push_back({std::min<int64_t>(session.options().n_ubatch, int64_t(prompt.size()) - b), false});
  st->r.n_prompt = int64_t(prompt.size());
  return add_stream(std::move(st));
}

int Scheduler::add(Session& session, const BridgePrompt& prompt, const GenerateOptions& o, const GenerateCallbacks& cb) {
  if (prompt.segments.empty() || prompt.segments.back().image) throw Error("the prompt must end with text");
  auto st = std::make_unique<Stream>();
  st->s = &session, st->o = &o, st->cb = &cb;
  st->rows = prompt.batch;
  st->accepted = prompt.token_ids;
  // generate(): each segment as its own batch, in n_ubatch chunks.
  for (const BridgeSegment& seg : prompt.segments)
    for (int64_t b = 0; b < seg.n_rows; b += session.options().n_ubatch)
      st->chunks.push_back({std::min<int64_t>(session.options().n_ubatch, seg.n_rows - b), seg.image});
  st->r.n_prompt = prompt.batch.size();
  return add_stream(std::move(st));
}

void Scheduler::cancel(int id) {
  if (id < 0 || size_t(id) >= streams_.size() || !streams_[size_t(id)]) throw Error("scheduler: no stream " + std::to_string(id));
  streams_[size_t(id)]->finished = true;
}

bool Scheduler::done(int id) const {
  return id >= 0 && size_t(id) < streams_.size() && (!streams_[size_t(id)] || streams_[size_t(id)]->finished);
}

const GenerateResult& Scheduler::result(int id) const {
  if (id < 0 || size_t(id) >= streams_.size() || !streams_[size_t(id)]) throw Error("scheduler: no stream " + std::to_string(id));
  return streams_[size_t(id)]->r;
}

GenerateResult Scheduler::take_result(int id) {
  if (!done(id) || !streams_[size_t(id)]) throw Error("scheduler: stream " + std::to_string(id) + " is not done or already taken");
  GenerateResult r = std::move(streams_[size_t(id)]->r);
  streams_[size_t(id)].reset();
  return r;
}

int64_t Scheduler::active() const {
  int64_t n = 0;
  for (const auto& st : streams_) n += st && !st->finished;
  return n;
}

// The next prompt chunk of one stream (round robin); when it was the stream's last, the stream
// takes the logits of its last row and generates from the next decode step on.
void Scheduler::prefill_one() {
  for (size_t k = 0; k < streams_.size(); ++k) {
    const auto& sp = streams_[(next_prefill_ + k) % streams_.size()];
    if (!sp || !sp->prefilling()) continue;
    Stream& st = *sp;
    next_prefill_ = (next_prefill_ + k + 1) % streams_.size();
    const auto [n, image] = st.chunks[st.next_chunk];
    const bool last = st.next_chunk + 1 == st.chunks.size();
    Batch part;
    for (int64_t i = st.next_row; i < st.next_row + n; ++i) {
      const bool want = last && i + 1 == st.next_row + n;
      if (st.rows.token[size_t(i)] >= 0) part.add_token(st.rows.token[size_t(i)], st.rows.pos[size_t(i)], want);
      else part.add_embedding(st.rows.embd[size_t(i)], st.rows.pos[size_t(i)], st.rows.deepstack[size_t(i)], want);
    }
    const auto t = Clock::now();
    Logits lg;
    try {
      lg = st.s->decode(part);
    } catch (const Error& e) {
      if (e.kind() != ErrorKind::cancelled) throw;
      st.r.stop = StopReason::cancelled;
      st.finished = true;  // this stream only: the others go on
      return;
    }
    const double ms = ms_since(t);
    st.r.prefill_ms += ms;
    if (image) st.r.image_prefill_ms += ms, st.r.n_image_rows += n;
    st.next_row += n, ++st.next_chunk;
    if (last) {
      st.logits.assign(lg.last(), lg.last() + lg.n_vocab);
      st.loop = std::make_unique<TokenLoop>(*st.s, tok_, *st.o, *st.cb, st.r, st.accepted);
    }
    return;
  }
}

// Every generating stream picks its next token; those that go on decode it in one batched step.
void Scheduler::decode_all() {
  std::vector<Stream*> going;
  for (auto& st : streams_) {
    if (!st || !st->generating()) continue;
    if (st->s->abort() && st->s->abort()()) {
      st->r.stop = StopReason::cancelled;
      st->finished = true;
      continue;
    }
    st->pending = st->loop->next(st->logits.data());
    if (st->pending < 0) st->finished = true;
    else going.push_back(st.get());
  }
  if (going.empty()) return;
  std::vector<Session*> sessions;
  std::vector<int32_t> tokens;
  for (Stream* st : going) sessions.push_back(st->s), tokens.push_back(st->pending);
  const auto t = Clock::now();
  const Logits lg = decoder_.step(sessions, tokens);
  const double ms = ms_since(t);
  for (size_t i = 0; i < going.size(); ++i) {
    going[i]->logits.assign(lg.row(int64_t(i)), lg.row(int64_t(i)) + lg.n_vocab);
    going[i]->r.decode_ms += ms;
    ++going[i]->r.n_decoded;
  }
}

bool Scheduler::step() {
  if (active() == 0) return false;
  prefill_one();
  decode_all();
  // Finished streams keep only their result (the prompt rows and logits go).
  for (auto& st : streams_)
    if (st && st->finished && st->loop) {
      st->loop.reset();
      st->rows.clear();
      std::vector<float>().swap(st->logits);
    }
  return true;
}

void Scheduler::run() {
  while (step()) {
  }
}

}  // namespace ckjit::graph
