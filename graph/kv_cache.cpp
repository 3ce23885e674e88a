#include "graph/kv_cache.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "jit/hand_kernels.h"
#include "runtime/error.h"
#include "runtime/quants/f16_rows.h"

namespace ckjit::graph {

namespace {
using ToF16 = void (*)(const float*, uint16_t*, int64_t);
constexpr jit::HandCopy<ToF16> kToF16[] = {
    {jit::HandIsa::avx2, quant::f32_to_f16_rows_avx2},
    {jit::HandIsa::portable, quant::f32_to_f16_rows},
};
static_assert(jit::lists_the_copies(kToF16, jit::HandOp::f16_rows));
}  // namespace

KvCache::KvCache(int64_t n_layer, int64_t n_ctx, int64_t n_head_kv, int64_t head_dim, KvLayout layout, int panel,
                 const topo::Isa& isa)
    : n_layer_(n_layer), n_ctx_(n_ctx), n_pad_(padded_slots(n_ctx)), n_head_kv_(n_head_kv), dh_(head_dim), layout_(layout),
      panel_(panel),
      layer_elems_(size_t(n_head_kv * head_dim * (layout == KvLayout::panels ? padded_slots(n_ctx) : n_ctx))),
      to_f16_(jit::pick(kToF16, jit::HandOp::f16_rows, isa).fns),
      k_(new uint16_t[layer_elems_ * size_t(n_layer)]), v_(new uint16_t[layer_elems_ * size_t(n_layer)]) {
  if (panel != 8 && panel != 16) throw Error("KV cache: panels are 8 or 16 keys wide");
  if (layout == KvLayout::panels && head_dim % panel != 0)
    throw Error("KV cache: panels of " + std::to_string(panel) + " need a head dim that is a multiple of it");
}

void KvCache::write(int64_t layer, int64_t slot, const float* k, const float* v) {
  uint16_t* kl = k_.get() + size_t(layer) * layer_elems_;
  uint16_t* vl = v_.get() + size_t(layer) * layer_elems_;
  const int64_t width = n_head_kv_ * dh_;
  if (layout_ == KvLayout::rows) {
    to_f16_(k, kl + slot * width, width);
    to_f16_(v, vl + slot * width, width);
    return;
  }
  // Keys: per head, up to 128 dims at a time converted on the stack, then spread down their panel
  // column. Values: each run of P dims converted straight into its panel (P divides head_dim).
  constexpr int64_t kChunk = 128;
  uint16_t kh[kChunk];
  const int64_t P = panel_, lane = slot % P;
  for (int64_t h = 0; h < n_head_kv_; ++h) {
    uint16_t* kp = kl + h * n_pad_ * dh_ + (slot / P) * dh_ * P + lane;  // key `slot`: every P-th half of its panel
    uint16_t* vp = vl + h * n_pad_ * dh_ + slot * P;                      // value `slot`: P halves per d-panel
    for (int64_t d0 = 0; d0 < dh_; d0 += kChunk) {
      const int64_t len = std::min(kChunk, dh_ - d0);
      to_f16_(k + h * dh_ + d0, kh, len);
      for (int64_t d = 0; d < len; ++d) kp[(d0 + d) * P] = kh[d];
    }
    for (int64_t d = 0; d < dh_; d += P) to_f16_(v + h * dh_ + d, vp + (d / P) * n_pad_ * P, P);
  }
}

void KvCache::copy_prefix(const KvCache& src, int64_t n) {
  if (!same_shape(src)) throw Error("KV cache: copy between caches of different shapes");
  if (n < 0 || n > n_ctx_ || n > src.n_ctx_) throw Error("KV cache: copy of " + std::to_string(n) + " slots exceeds a context");
  std::vector<const uint16_t*> from;
  src.for_each_run(n, [&](const uint16_t* p, size_t) { from.push_back(p); });
  size_t i = 0;
  for_each_run(n, [&](uint16_t* p, size_t c) { std::memcpy(p, from[i++], c * sizeof(uint16_t)); });
  for (int64_t l = 0; l < n_layer_; ++l) seal(l, n);
}

void KvCache::seal(int64_t layer, int64_t n_filled) {
  const int64_t P = panel_, end = (n_filled + P - 1) / P * P;
  if (layout_ != KvLayout::panels || end == n_filled) return;
  uint16_t* vl = v_.get() + size_t(layer) * layer_elems_;
  for (int64_t h = 0; h < n_head_kv_; ++h)
    for (int64_t d = 0; d < dh_; d += P)
      std::memset(vl + h * n_pad_ * dh_ + (d / P) * n_pad_ * P + n_filled * P, 0, size_t(end - n_filled) * P * sizeof(uint16_t));
}

}  // namespace ckjit::graph
