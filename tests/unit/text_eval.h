#pragma once
// Test helper: a TextModel and one Session on it, fed token ids at consecutive text positions
// (the shape of the old single-sequence API the decoder tests were written against).
#include <cstring>
#include <span>

#include "graph/session.h"
#include "graph/text_model.h"

namespace ckjit::test {

struct TextEval {
  TextEval(const gguf::GgufFile& f, graph::ModelOptions mo, graph::SessionOptions so, Workers& pool)
      : model(f, with_rows(mo, so), pool), session(model, so, pool) {}

  // Appends tokens; returns the last row's logits; all_logits (optional) receives every row's.
  const float* eval(std::span<const int32_t> toks, float* all_logits = nullptr) {
    graph::Batch b;
    for (size_t i = 0; i < toks.size(); ++i)
      b.add_token(toks[i], graph::Position::text(session.next_position() + int64_t(i)), all_logits || i + 1 == toks.size());
    graph::Logits lg = session.decode(b);
    if (all_logits) std::memcpy(all_logits, lg.data, size_t(lg.rows * lg.n_vocab) * sizeof(float));
    return lg.last();
  }
  const graph::Hparams& hparams() const { return model.hparams(); }
  int64_t n_past() const { return session.n_past(); }

  graph::TextModel model;
  graph::Session session;

 private:
  static graph::ModelOptions with_rows(graph::ModelOptions mo, const graph::SessionOptions& so) {
    mo.linear.plan_rows = so.n_ubatch;
    return mo;
  }
};

}  // namespace ckjit::test
