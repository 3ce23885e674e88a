#pragma once
// One sequence over a shared TextModel (llama.cpp's llama_context): the f16 KV cache, the
// activation arena and the positions seen so far. decode(batch) appends the batch's rows at the
// next KV slots — token rows are looked up in token_embd, embedding rows copied — runs them through
// the decoder in chunks of n_ubatch rows (M > 1: GEMM kernels, M = 1: GEMV), adds deepstack slices
// after the first layers for the rows that carry them, and returns the logits of the rows that
// asked for them. Each row rotates by its own position (Batch::pos), never by its KV slot.
// A session is used by one thread at a time; sessions on one model may run concurrently, each
// with its own Workers.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "graph/activations.h"
#include "graph/arena.h"
#include "graph/batch.h"
#include "graph/decoder_forward.h"
#include "graph/kv_cache.h"
#include "graph/tiled_attention.h"
#include "graph/text_model.h"
#include "runtime/op_profile.h"
#include "runtime/tap.h"

namespace ckjit::graph {

// The attention's float order. tiled (the default): graph/tiled_attention.h (f32, 32 x 128 JIT
// tiles over the panel KV cache; the same bits on every ISA path, several times faster on long
// prompts; judged by llama.cpp's envelope, not bit-comparable with it). llama: llama.cpp's
// flash-attention row path (f16 accumulator), for bit-parity tests with llama.cpp's rows and with
// --llama-order.
enum class AttentionOrder { llama, tiled };

struct SessionOptions {
  int64_t n_ctx = 4096;
  int64_t n_ubatch = 512;  // rows per prefill chunk
  AttentionOrder attention = AttentionOrder::tiled;
  // Refuse (Error) a context whose KV cache and activations exceed the memory this process may
  // still take (topology/memory.h) before allocating them.
  bool check_memory = true;
};

// The logits decode() returned: rows() rows of n_vocab floats, in batch order of the rows that
// asked for them; valid until the next decode.
struct Logits {
  const float* data = nullptr;
  int64_t rows = 0, n_vocab = 0;
  const float* row(int64_t i) const { return data + i * n_vocab; }
  const float* last() const { return row(rows - 1); }
};

class Session {
 public:
  Session(const TextModel& model, const SessionOptions& options, Workers& pool);
  ~Session();

  const TextModel& model() const { return model_; }
  int64_t n_ctx() const { return opt_.n_ctx; }
  int64_t n_past() const { return n_past_; }  // KV slots in use
  // The position a text token following everything decoded so far takes: 1 + the largest t/h/w
  // component seen (0 when empty). After an image of ny x nx merged rows at p0 this is
  // p0 + max(nx, ny), as llama.cpp resumes (spec/qwen3vl.md D.4).
  int64_t next_position() const { return next_pos_; }
  void reset() { truncate(0); }
  // Keeps the first n_rows KV rows and forgets the rest (a cached prompt prefix reused): the next
  // row goes to slot n_rows, at the position that followed row n_rows - 1. Error when n_rows is
  // negative or more than n_past().
  void truncate(int64_t n_rows);
  // Rows [0, n) := src's rows (llama_memory_seq_cp of a prefix): its KV rows and positions. Error
  // for a session of another model or KV layout, or n beyond src's rows or this context.
  void copy_prefix_from(const Session& src, int64_t n);
  // For a saved state (graph/session_state.h): the KV cache, and next_position() after each row.
  const KvCache& kv() const { return *kv_; }
  std::span<const int64_t> positions_after() const { return {next_after_.data(), size_t(n_past_)}; }
  // Rows [0, n) from a saved state: fill writes their KV runs; next_after as positions_after().
  void restore(int64_t n, std::span<const int64_t> next_after, const std::function<void(KvCache&)>& fill);

  // Runs the batch (Error on an empty batch, a full context, an id outside the vocabulary, an
  // embedding row missing, deepstack rows on a model without deepstack layers).
  Logits decode(const Batch& batch);

  // Op timings go to `p` from now on (nullptr: off); the caller sets its phase.
  void set_profile(OpProfile* p) { profile_ = p; }
  OpProfile* profile() const { return profile_; }
  // Checkpoint outputs go to `t` from now on (nullptr: off); see runtime/checkpoints.h.
  void set_tap(Tap* t) { tap_ = t; }
  // Asked before each chunk decode() runs (prefill chunks, decode steps); true stops it with
  // Error (kind cancelled), the chunks already run kept in the KV cache. Empty: never.
  void set_abort(std::function<bool()> f) { abort_ = std::move(f); }
  const std::function<bool()>& abort() const { return abort_; }

  size_t arena_bytes() const { return arena_.bytes(); }
  size_t kv_bytes() const { return kv_->bytes(); }
  const SessionOptions& options() const { return opt_; }
  // Floats of attention scratch one worker needs for this session's attention and context.
  int64_t attention_scratch_per_worker() const { return att_scratch_per_worker_; }

  // For graph::BatchedDecoder, which runs one row of several sessions in one pass: where this
  // session's next row goes (Error when the context is full), and the row counted once it ran.
  RowSite next_site();
  void count_row(const Position& p);

 private:
  void validate(const Batch& b) const;

  const TextModel& model_;
  SessionOptions opt_;
  Workers& pool_;
  std::unique_ptr<KvCache> kv_;
  std::unique_ptr<TiledAttention> tiled_;  // AttentionOrder::tiled; null: llama.cpp's row attention
  Arena arena_;
  ActivationSlots s_{};
  int64_t att_scratch_per_worker_ = 0;
  std::vector<float> logits_;  // grows to the most logits rows one batch asked for, then stays
  std::vector<int64_t> want_;  // chunk rows whose logits are wanted
  int64_t n_past_ = 0, next_pos_ = 0;
  std::vector<int64_t> next_after_;  // [i]: next_position() once rows 0..i ran (for truncate)
  OpProfile* profile_ = nullptr;
  Tap* tap_ = nullptr;
  std::function<bool()> abort_;
};

}  // namespace ckjit::graph
