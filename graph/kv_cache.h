#pragma once
// The f16 key/value cache of one sequence: per layer, n_ctx rows of n_head_kv*head_dim halves for
// K and for V (llama.cpp's default cache type is F16). Allocated once for the context length.
#include <cstdint>
#include <vector>

namespace ckjit::graph {

class KvCache {
 public:
  KvCache(int64_t n_layer, int64_t n_ctx, int64_t kv_width)
      : n_ctx_(n_ctx), width_(kv_width), k_(size_t(n_layer * n_ctx * kv_width)), v_(k_.size()) {}
  uint16_t* k(int64_t layer, int64_t pos = 0) { return k_.data() + (layer * n_ctx_ + pos) * width_; }
  uint16_t* v(int64_t layer, int64_t pos = 0) { return v_.data() + (layer * n_ctx_ + pos) * width_; }
  int64_t n_ctx() const { return n_ctx_; }
  size_t bytes() const { return (k_.size() + v_.size()) * sizeof(uint16_t); }

 private:
  int64_t n_ctx_, width_;
  std::vector<uint16_t> k_, v_;
};

}  // namespace ckjit::graph
