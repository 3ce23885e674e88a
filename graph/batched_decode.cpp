#include "graph/batched_decode.h"

#include <algorithm>

#include "runtime/error.h"

namespace ckjit::graph {

BatchedDecoder::BatchedDecoder(const TextModel& model, int64_t max_rows, int64_t att_scratch_per_worker, Workers& pool)
    : model_(model), pool_(pool), max_rows_(max_rows), att_scratch_per_worker_(att_scratch_per_worker) {
  if (max_rows < 1) throw Error("batched decode: at least one row per step");
  s_ = reserve_activations(arena_, model_, max_rows_, pool_.size(), att_scratch_per_worker_);
  arena_.commit();
  logits_.resize(size_t(max_rows_ * model_.hparams().n_vocab));
  want_.reserve(size_t(max_rows_));
  sites_.reserve(size_t(max_rows_));
}

Logits BatchedDecoder::step(std::span<Session* const> sessions, std::span<const int32_t> tokens) {
  const int64_t m = int64_t(sessions.size()), V = model_.hparams().n_vocab;
  if (int64_t(tokens.size()) != m) throw Error("batched decode: " + std::to_string(m) + " sessions but " + std::to_string(tokens.size()) + " tokens");
  if (m == 0) throw Error("batched decode: empty step");
  if (m > max_rows_) throw Error("batched decode: " + std::to_string(m) + " rows exceed the step's " + std::to_string(max_rows_));
  for (int64_t i = 0; i < m; ++i) {
    const Session* si = sessions[size_t(i)];
    if (!si || &si->model() != &model_) throw Error("batched decode: session " + std::to_string(i) + " is not on this model");
    if (si->attention_scratch_per_worker() > att_scratch_per_worker_)
      throw Error("batched decode: session " + std::to_string(i) + "'s attention needs more scratch than the decoder was made for");
    if (tokens[size_t(i)] < 0 || tokens[size_t(i)] >= V) throw Error("token id " + std::to_string(tokens[size_t(i)]) + " is outside the vocabulary");
    for (int64_t j = 0; j < i; ++j)
      if (sessions[size_t(j)] == si) throw Error("batched decode: session " + std::to_string(i) + " is listed twice");
  }
  batch_.clear();
  sites_.clear();
  for (int64_t i = 0; i < m; ++i) {
    Session& si = *sessions[size_t(i)];
    sites_.push_back(si.next_site());  // Error on a full context, before anything ran
    batch_.add_token(tokens[size_t(i)], Position::text(si.next_position()), true);
  }
  const ForwardState state{*sites_[0].kv, sites_[0].tiled, arena_, s_, att_scratch_per_worker_, want_};
  forward_chunk(model_, pool_, state, Observers{profile_, nullptr, 0}, batch_, 0, m, 0, logits_.data(), sites_.data());
  for (int64_t i = 0; i < m; ++i) sessions[size_t(i)]->count_row(batch_.pos[size_t(i)]);
  return Logits{logits_.data(), m, V};
}

}  // namespace ckjit::graph
