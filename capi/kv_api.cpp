// The llama.h-style calls of the C API (include/ckjit.h, "KV rows and raw decoding"): a session's
// KV rows kept, cut, copied, saved and loaded, and tokens decoded without sampling — alone, or one
// row of several sessions in one pass (graph::BatchedDecoder: each row's bits as alone).
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "capi/call_guard.h"
#include "graph/batched_decode.h"
#include "graph/session_state.h"

using namespace ckjit;
using namespace ckjit::capi;

namespace {

// The rows a decode returned, kept for ckjit_session_logits_ith; the last one is also the
// session's ckjit_session_logits.
void keep_logits(ckjit_session* s, const graph::Logits& lg) {
  s->decoded_logits.assign(lg.data, lg.data + lg.rows * lg.n_vocab);
  s->decoded_rows = lg.rows;
  if (lg.rows > 0) s->logits.assign(lg.last(), lg.last() + lg.n_vocab);
}

void check_tokens(const ckjit_session* s, const int32_t* tokens, size_t n) {
  need(tokens, "tokens");
  if (n == 0) raise(CKJIT_ERR_INVALID_ARGUMENT, "no tokens");
  const int64_t V = s->core->pair->hparams().n_vocab;
  for (size_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= V)
      raise(CKJIT_ERR_INVALID_ARGUMENT, "token " + std::to_string(tokens[i]) + " is outside the vocabulary (" + std::to_string(V) + ")");
}

}  // namespace

extern "C" {

int64_t ckjit_session_n_past(const ckjit_session* s) {
  if (!s || !live_handle(s, Kind::session)) return 0;
  return s->ctx->session().n_past();
}

ckjit_status ckjit_session_truncate(ckjit_session* session, int64_t n_keep) {
  ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* s = session_of(session);
    const int64_t n = s->ctx->session().n_past();
    if (n_keep < 0 || n_keep > n)
      raise(CKJIT_ERR_INVALID_ARGUMENT, "n_keep is " + std::to_string(n_keep) + "; the session holds " + std::to_string(n) + " rows");
    s->ctx->truncate(n_keep);
    return CKJIT_OK;
  });
}

ckjit_status ckjit_session_copy_prefix(ckjit_session* dst, const ckjit_session* src, int64_t n_rows) {
  ErrorSlot* slot = slot_of(dst);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* d = session_of(dst);
    const ckjit_session* s = session_of(src);
    if (d->core != s->core) raise(CKJIT_ERR_INVALID_ARGUMENT, "the sessions are of different models");
    d->ctx->copy_prefix_from(*s->ctx, n_rows);
    return CKJIT_OK;
  });
}

ckjit_status ckjit_session_save_state(const ckjit_session* session, const char* path) {
  ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_IO, [&] {
    const ckjit_session* s = session_of(session);
    need(path, "path");
    const std::string tmp = std::string(path) + ".part";
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      if (!out) raise(CKJIT_ERR_IO, std::string("cannot write ") + path);
      graph::save_session_state(s->ctx->session(), out);
      out.flush();
      if (!out) raise(CKJIT_ERR_IO, std::string("writing ") + path + " failed (disk full?)");
    }
    // Whole or not at all: the file appears under its name only once written.
    if (std::rename(tmp.c_str(), path) != 0) raise(CKJIT_ERR_IO, std::string("cannot write ") + path);
    return CKJIT_OK;
  });
}

ckjit_status ckjit_session_load_state(ckjit_session* session, const char* path) {
  ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* s = session_of(session);
    need(path, "path");
    std::ifstream in(path, std::ios::binary);
    if (!in) raise(CKJIT_ERR_IO, std::string("cannot open ") + path);
    s->ctx->rows_replaced();
    s->clear_prompt();
    graph::load_session_state(s->ctx->session(), in);
    return CKJIT_OK;
  });
}

ckjit_status ckjit_session_decode(ckjit_session* session, const int32_t* tokens, size_t n_tokens, int32_t all_logits) {
  ErrorSlot* slot = slot_of(session);
  return guarded(slot, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    ckjit_session* s = session_of(session);
    check_tokens(s, tokens, n_tokens);
    const graph::Session& gs = s->ctx->session();
    if (gs.n_past() + int64_t(n_tokens) > gs.n_ctx())
      raise(CKJIT_ERR_CONTEXT_FULL, std::to_string(n_tokens) + " tokens do not fit behind the session's " + std::to_string(gs.n_past()) +
                                        " rows (n_ctx " + std::to_string(gs.n_ctx()) + "): raise n_ctx or truncate the session");
    keep_logits(s, s->ctx->decode_tokens(std::span<const int32_t>(tokens, n_tokens), all_logits != 0));
    return CKJIT_OK;
  });
}

ckjit_status ckjit_decode_together(ckjit_session* const* sessions, const int32_t* tokens, size_t n) {
  return guarded(nullptr, CKJIT_ERR_INVALID_ARGUMENT, [&] {
    need(sessions, "sessions");
    if (n == 0) raise(CKJIT_ERR_INVALID_ARGUMENT, "no sessions");
    std::vector<graph::Session*> ss;
    int64_t scratch = 0;
    for (size_t i = 0; i < n; ++i) {
      ckjit_session* s = session_of(sessions[i]);
      if (s->core != sessions[0]->core) raise(CKJIT_ERR_INVALID_ARGUMENT, "the sessions are of different models");
      check_tokens(s, tokens + i, 1);
      if (s->ctx->session().n_past() + 1 > s->ctx->session().n_ctx())
        raise(CKJIT_ERR_CONTEXT_FULL, "session " + std::to_string(i) + "'s context is full");
      ss.push_back(&s->ctx->session());
      scratch = std::max(scratch, ss.back()->attention_scratch_per_worker());
    }
    for (size_t i = 0; i < n; ++i) sessions[i]->ctx->appending();
    graph::BatchedDecoder dec(sessions[0]->core->pair->text(), int64_t(n), scratch, sessions[0]->ctx->pool());
    const graph::Logits lg = dec.step(ss, std::span<const int32_t>(tokens, n));
    for (size_t i = 0; i < n; ++i) {
      graph::Logits one{lg.row(int64_t(i)), 1, lg.n_vocab};
      keep_logits(sessions[i], one);
    }
    return CKJIT_OK;
  });
}

const float* ckjit_session_logits_ith(const ckjit_session* s, int32_t i, int32_t* n_vocab) {
  if (n_vocab) *n_vocab = 0;
  if (!s || !live_handle(s, Kind::session) || s->decoded_rows == 0) return nullptr;
  const int64_t row = i < 0 ? s->decoded_rows + i : i;
  if (row < 0 || row >= s->decoded_rows) return nullptr;
  const int64_t V = int64_t(s->decoded_logits.size()) / s->decoded_rows;
  if (n_vocab) *n_vocab = int32_t(V);
  return s->decoded_logits.data() + row * V;
}

}  // extern "C"
