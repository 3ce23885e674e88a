#pragma once
// The f16 key/value cache of one sequence: per layer, n_ctx rows of n_head_kv*head_dim halves for
// K and for V (llama.cpp's default cache type is F16). Allocated once for the context length.
#include <cstdint>
#include <memory>

namespace ckjit::graph {

class KvCache {
 public:
  // Not zero-filled: a position is always written before it is read, and untouched pages of a
  // long context are never faulted in.
  KvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_width)
      : n_ctx_(n_ctx), width_(kv_width), elems_(size_t(n_layer * n_ctx * kv_width)),
        k_(new uint16_t[elems_]), v_(new uint16_t[elems_]) {}
  uint16_t* k(int64_t layer, int64_t pos = 0) { return k_.get() + (layer * n_ctx_ + pos) * width_; }
  uint16_t* v(int64_t layer, int64_t pos = 0) { return v_.get() + (layer * n_ctx_ + pos) * width_; }
  int64_t n_ctx() const { return n_ctx_; }
  size_t bytes() const { return 2 * elems_ * sizeof(uint16_t); }

 private:
  int64_t n_ctx_, width_;
  size_t elems_;
  std::unique_ptr<uint16_t[]> k_, v_;
};

}  // namespace ckjit::graph
