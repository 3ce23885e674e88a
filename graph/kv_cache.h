#pragma once
// The f16 key/value cache of one sequence (llama.cpp's default cache type is F16), allocated once
// for the context length, in one of two layouts:
// - rows: per layer, n_ctx rows of n_head_kv*head_dim halves for K and for V (llama.cpp's layout;
//   the row attention of --llama-order reads it);
// - panels: per layer and KV head, K as n_pad/P panels of head_dim x P keys and V as head_dim/P
//   panels of n_pad x P values (P = 8 or 16, the tiled attention's op=dense path: ymm or zmm;
//   n_pad = n_ctx rounded up to 16): the op=dense "weight" layout the tiled attention multiplies
//   by directly, so nothing is repacked per token.
#include <cstdint>
#include <memory>

#include "topology/isa.h"

namespace ckjit::graph {

enum class KvLayout { rows, panels };

class KvCache {
 public:
  // Not zero-filled: a position is written before it is read, and untouched pages of a long
  // context are never faulted in (panels: see write()).
  // panel: P of the panel layout (8 or 16; head_dim a multiple of it). isa: the load's, for the
  // copy of the f32 -> f16 conversion writes run (jit::hand_isa, HandOp::f16_rows).
  KvCache(int64_t n_layer, int64_t n_ctx, int64_t n_head_kv, int64_t head_dim, KvLayout layout, int panel,
          const topo::Isa& isa);

  KvLayout layout() const { return layout_; }
  int64_t n_ctx() const { return n_ctx_; }
  int64_t n_pad() const { return n_pad_; }
  int panel() const { return panel_; }
  size_t bytes() const { return 2 * layer_elems_ * size_t(n_layer_) * sizeof(uint16_t); }
  // bytes() of a cache with these dimensions, before it is allocated (in double: an absurd context
  // must be refused by the memory check, not wrap around).
  static double bytes_for(int64_t n_layer, int64_t n_ctx, int64_t n_head_kv, int64_t head_dim, KvLayout layout) {
    const int64_t slots = layout == KvLayout::panels ? padded_slots(n_ctx) : n_ctx;
    return 2.0 * double(sizeof(uint16_t)) * double(n_layer) * double(n_head_kv * head_dim) * double(slots);
  }
  // n_pad() for a context of n_ctx slots: a whole number of panels of either width.
  static int64_t padded_slots(int64_t n_ctx) { return (n_ctx + 15) / 16 * 16; }

  // Slot `slot` of layer `layer` := f16(k), f16(v) (n_head_kv*head_dim floats each, round to
  // nearest even). Different slots may be written concurrently.
  void write(int64_t layer, int64_t slot, const float* k, const float* v);
  // After slots [0, n_filled) of a layer are written: panels zero the V entries of the slots up to
  // the next multiple of P, which a tile reads past the last key (with weight exactly 0, so they
  // must be finite). Rows: nothing to do.
  void seal(int64_t layer, int64_t n_filled);

  // Whether two caches hold rows the same way (dimensions, layout, panel width; context aside).
  bool same_shape(const KvCache& o) const {
    return n_layer_ == o.n_layer_ && n_head_kv_ == o.n_head_kv_ && dh_ == o.dh_ && layout_ == o.layout_ && panel_ == o.panel_;
  }
  // The runs of halves (K and V, every layer) that hold slots [0, n) — a panel's unused lanes
  // included — in a fixed order, as (pointer, count): what a prefix copy or a saved state moves.
  // (The const form's pointers are for reading only.)
  template <class F>
  void for_each_run(int64_t n, F&& f) {
    for (int64_t l = 0; l < n_layer_; ++l)
      for (int kv = 0; kv < 2; ++kv) {
        uint16_t* base = (kv == 0 ? k_ : v_).get() + size_t(l) * layer_elems_;
        if (layout_ == KvLayout::rows) {
          f(base, size_t(n * n_head_kv_ * dh_));
          continue;
        }
        for (int64_t h = 0; h < n_head_kv_; ++h) {
          uint16_t* head = base + h * n_pad_ * dh_;
          if (kv == 0) f(head, size_t((n + panel_ - 1) / panel_ * dh_ * panel_));  // whole key panels
          else
            for (int64_t d = 0; d < dh_; d += panel_) f(head + (d / panel_) * n_pad_ * panel_, size_t(n * panel_));
        }
      }
  }
  template <class F>
  void for_each_run(int64_t n, F&& f) const {
    const_cast<KvCache*>(this)->for_each_run(n, [&](uint16_t* p, size_t c) { f(static_cast<const uint16_t*>(p), c); });
  }
  // Slots [0, n) := src's (same_shape; n within both contexts), each layer sealed at n.
  void copy_prefix(const KvCache& src, int64_t n);

  // rows: the layer's first row (slot j at + j * kv_width).
  const uint16_t* k_rows(int64_t layer) const { return k_.get() + size_t(layer) * layer_elems_; }
  const uint16_t* v_rows(int64_t layer) const { return v_.get() + size_t(layer) * layer_elems_; }
  // panels: KV head h's key panels (n_pad/P of head_dim x P) and value panels (head_dim/P of n_pad x P).
  const uint16_t* k_panels(int64_t layer, int64_t h) const { return k_rows(layer) + h * n_pad_ * dh_; }
  const uint16_t* v_panels(int64_t layer, int64_t h) const { return v_rows(layer) + h * n_pad_ * dh_; }

 private:
  int64_t n_layer_, n_ctx_, n_pad_, n_head_kv_, dh_;
  KvLayout layout_;
  int panel_;
  size_t layer_elems_;
  void (*to_f16_)(const float* x, uint16_t* y, int64_t n);  // the copy chosen for the load's Isa
  std::unique_ptr<uint16_t[]> k_, v_;
};

}  // namespace ckjit::graph
