#pragma once
// Continuous batching over one TextModel (llama-server's slots, vLLM's scheduler, without paging):
// streams join and leave between steps. Each step runs the next prefill chunk (at most the
// session's n_ubatch rows) of one stream that still has prompt rows, round robin, so a running
// stream waits one chunk at most for a newcomer; then one batched decode step
// (graph::BatchedDecoder) for every stream that is generating. A stream's prompt is cut exactly as
// generate() cuts it and each decode row is computed as its session's own one-row decode, so every
// stream gets the tokens, text and logits generate() would give it alone (tested).
// Image encodes are not the scheduler's: a stream joins with its projector rows already made.
#include <cstdint>
#include <memory>
#include <vector>

#include "graph/batched_decode.h"
#include "graph/bridge.h"
#include "graph/generate.h"
#include "graph/session.h"

namespace ckjit::graph {

class Scheduler {
 public:
  // Up to max_streams streams at once; every stream's session must be on `model` with an
  // attention scratch of at most att_scratch_per_worker floats (Session::attention_scratch_per_worker).
  Scheduler(const TextModel& model, const tok::Tokenizer& tok, int64_t max_streams, int64_t att_scratch_per_worker,
            Workers& pool);
  ~Scheduler();

  // Adds a stream on `session` (empty or continuing; the caller keeps it, the options, callbacks
  // and a bridge prompt alive until the stream is done). Returns its id. Errors: as generate()'s,
  // and more streams than max_streams, or a session already in use by a stream.
  int add(Session& session, const std::vector<int32_t>& prompt, const GenerateOptions& o, const GenerateCallbacks& cb);
  int add(Session& session, const BridgePrompt& prompt, const GenerateOptions& o, const GenerateCallbacks& cb);
  // Ends a stream before its next step (its result keeps what it generated; its session is free).
  void cancel(int id);

  // One step; false when no stream is left to run.
  bool step();
  // Steps until every stream is done.
  void run();

  bool done(int id) const;
  // The result of a stream (complete once done(id)).
  const GenerateResult& result(int id) const;
  // Moves a done stream's result out and forgets the stream (a long-running server's streams do
  // not accumulate); result(id) is then an Error.
  GenerateResult take_result(int id);
  int64_t active() const;
  // The attention scratch per worker the scheduler's decode steps were made for.
  int64_t att_scratch_per_worker() const { return att_scratch_; }

 private:
  struct Stream;
  int add_stream(std::unique_ptr<Stream> st);
  void prefill_one();
  void decode_all();

  const TextModel& model_;
  const tok::Tokenizer& tok_;
  Workers& pool_;
  int64_t max_streams_, att_scratch_;
  BatchedDecoder decoder_;
  std::vector<std::unique_ptr<Stream>> streams_;  // by id; null once taken
  size_t next_prefill_ = 0;                       // round robin over stream ids
};

}  // namespace ckjit::graph
