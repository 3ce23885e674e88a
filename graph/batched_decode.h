#pragma once
// Decode steps of several sessions at once (the inner step of continuous batching): row i is the
// next token of sessions[i]. The rows go through the decoder as one chunk, so each weight is read
// once per step for all of them, and each row is computed exactly as its own session's one-row
// decode would compute it (graph/linear.h Rows::decode; attention over its own cache only): a
// sequence's logits are byte-identical alone or in any batch, at any position in it, on every
// ISA path and thread count.
#include <cstdint>
#include <span>
#include <vector>

#include "graph/activations.h"
#include "graph/arena.h"
#include "graph/batch.h"
#include "graph/decoder_forward.h"
#include "graph/session.h"
#include "graph/text_model.h"
#include "runtime/op_profile.h"
#include "topology/workers.h"

namespace ckjit::graph {

class BatchedDecoder {
 public:
  // Up to max_rows sessions per step, each with an attention scratch of at most
  // att_scratch_per_worker floats (Session::attention_scratch_per_worker: sessions made with the
  // same options have the same).
  BatchedDecoder(const TextModel& model, int64_t max_rows, int64_t att_scratch_per_worker, Workers& pool);

  int64_t max_rows() const { return max_rows_; }
  // One step: tokens[i] appended to sessions[i] at its next text position; every row's logits, in
  // order (valid until the next step). Error, before anything runs, when the sizes differ, for
  // more rows than max_rows, a session of another model or listed twice, a session whose
  // attention needs more scratch, a full context, or an id outside the vocabulary.
  Logits step(std::span<Session* const> sessions, std::span<const int32_t> tokens);

  void set_profile(OpProfile* p) { profile_ = p; }

 private:
  const TextModel& model_;
  Workers& pool_;
  int64_t max_rows_, att_scratch_per_worker_;
  Arena arena_;
  ActivationSlots s_{};
  std::vector<float> logits_;
  std::vector<int64_t> want_;
  std::vector<RowSite> sites_;
  Batch batch_;
  OpProfile* profile_ = nullptr;
};

}  // namespace ckjit::graph
