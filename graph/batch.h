#pragma once
// One batch of rows for a Session (llama.cpp's llama_batch): each row is a token id or an
// embedding row (n_embd floats, e.g. a projector row of an image), with its own M-RoPE position
// (t, h, w, e; spec/qwen3vl.md A.4, D.4), optional deepstack slices added to the hidden state
// after the first decoder layers (image rows; A.5), and whether its logits are wanted.
// Positions are data: the session never derives them from the KV slot a row lands in.
// Embedding and deepstack rows are borrowed: they must stay alive until Session::decode returns.
#include <cstdint>
#include <span>
#include <vector>

namespace ckjit::graph {

struct Position {
  int32_t t = 0, h = 0, w = 0, e = 0;
  // A text token at sequence position p: t = h = w = p, e = 0.
  static Position text(int64_t p) { return {int32_t(p), int32_t(p), int32_t(p), 0}; }
  int32_t max_thw() const { return t > h ? (t > w ? t : w) : (h > w ? h : w); }
  bool operator==(const Position&) const = default;
};

class Batch {
 public:
  void add_token(int32_t id, Position pos, bool logits = false) { push(id, nullptr, nullptr, pos, logits); }
  // row: n_embd floats; deepstack: n_deepstack * n_embd floats (slice il is added after layer il), or null.
  void add_embedding(const float* row, Position pos, const float* deepstack = nullptr, bool logits = false) {
    push(-1, row, deepstack, pos, logits);
  }
  // Text tokens at positions p0, p0+1, ...; logits for the last one only when last_logits.
  static Batch text(std::span<const int32_t> ids, int64_t p0, bool last_logits = true) {
    Batch b;
    for (size_t i = 0; i < ids.size(); ++i) b.add_token(ids[i], Position::text(p0 + int64_t(i)), last_logits && i + 1 == ids.size());
    return b;
  }
  void clear() { token.clear(), embd.clear(), deepstack.clear(), pos.clear(), logits.clear(); }
  int64_t size() const { return int64_t(pos.size()); }
  bool empty() const { return pos.empty(); }
  int64_t n_logits() const {
    int64_t n = 0;
    for (uint8_t l : logits) n += l;
    return n;
  }

  std::vector<int32_t> token;            // -1 for an embedding row
  std::vector<const float*> embd;        // n_embd floats for embedding rows, else null
  std::vector<const float*> deepstack;   // n_deepstack * n_embd floats, or null (text rows: nothing added)
  std::vector<Position> pos;
  std::vector<uint8_t> logits;           // 1: this row's logits are returned

 private:
  void push(int32_t id, const float* row, const float* ds, Position p, bool want) {
    token.push_back(id);
    embd.push_back(row);
    deepstack.push_back(ds);
    pos.push_back(p);
    logits.push_back(want ? 1 : 0);
  }
};

}  // namespace ckjit::graph
