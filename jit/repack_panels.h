#pragma once
// The panel walk shared by every repack_* / unpack_* (layout in packed_weights.h): each weight
// type only says how one block of one row goes into, or comes out of, its panel super-block.
#include <cstring>
#include <type_traits>

#include "jit/packed_weights.h"
#include "runtime/error.h"
#include "runtime/quants/quant_internal.h"

namespace ckjit::jit::detail {

// Checks the shape and allocates the panels (uninitialised); block_bytes: one panel super-block.
PackedWeights allocate(TensorType type, int64_t n, int64_t k, int panel, int64_t block_bytes);

// Repacks n rows of k elements. Every panel super-block comes from one of two packers:
//  - pack(block, panel super-block, row in panel): one block of one row, writing only that row's
//    bytes; its panels are zeroed first, so rows past n and layout padding stay zero;
//  - pack_full(first row's block, row stride in blocks, panel super-block): all `panel` rows of a
//    full panel at once, every byte of the super-block written (padding zeroed) — the same bytes
//    as pack, without the zero fill (a second pass over ~1 GB) and with whole-vector stores.
// pack_full is used where `simd` says (the caller's: a full-panel packer runs here, repack_full.h);
// pass nullptr where a type has none.
template <class Block, class Pack, class PackFull>
PackedWeights repack_panels(TensorType type, const Block* src, int64_t n, int64_t k, int panel, int threads,
                            int64_t block_bytes, bool simd, Pack pack, PackFull pack_full) {
  PackedWeights w = allocate(type, n, k, panel, block_bytes);
  const int64_t nb = w.panel_stride / block_bytes;
  constexpr bool has_full = !std::is_same_v<PackFull, std::nullptr_t>;
  const bool fast = has_full && simd;
  for_each_panel(w, threads, [&](int64_t p) {
    uint8_t* pp = w.data.get() + p * w.panel_stride;
    const Block* rows = src + p * panel * nb;
    if constexpr (has_full) {
      if (fast && (p + 1) * panel <= n) {
        for (int64_t b = 0; b < nb; ++b) pack_full(rows + b, nb, pp + b * block_bytes);
        return;
      }
    }
    std::memset(pp, 0, size_t(w.panel_stride));
    for (int l = 0; l < panel && p * panel + l < n; ++l)
      for (int64_t b = 0; b < nb; ++b) pack(rows[l * nb + b], pp + b * block_bytes, l);
  });
  return w;
}

// The inverse walk: unpack(panel super-block, row in panel, block) for every block of every row.
template <class Block, class Unpack>
void unpack_panels(const PackedWeights& w, Block* dst, Unpack unpack) {
  const int64_t nb = w.panel_stride / w.block_bytes;
  for (int64_t row = 0; row < w.n; ++row) {
    const uint8_t* pp = w.panel_ptr(row / w.panel);
    const int l = int(row % w.panel);
    for (int64_t b = 0; b < nb; ++b) unpack(pp + b * w.block_bytes, l, dst[row * nb + b]);
  }
}

// The 6-bit scales and mins (unpacked, one byte per row) and the f16 d, dmin of a Q4_K or Q5_K
// block, which both panel layouts store alike.
template <class Layout, class Block>
void put_k4_scales(const Layout& L, const Block& x, uint8_t* dst, int l) {
  uint8_t sc[8], mn[8];
  quant::unpack_k4_scales(x.scales, sc, mn);
  for (int s = 0; s < 8; ++s) {
    dst[L.sc(s) + l] = sc[s];
    dst[L.mn(s) + l] = mn[s];
  }
  std::memcpy(dst + L.d() + 2 * l, &x.d, 2);
  std::memcpy(dst + L.dmin() + 2 * l, &x.dmin, 2);
}

template <class Layout, class Block>
void get_k4_scales(const Layout& L, const uint8_t* s, int l, Block& x) {
  uint8_t sc[8], mn[8];
  for (int i = 0; i < 8; ++i) {
    sc[i] = s[L.sc(i) + l];
    mn[i] = s[L.mn(i) + l];
  }
  quant::detail::pack_k4_scales(sc, mn, x.scales);
  std::memcpy(&x.d, s + L.d() + 2 * l, 2);
  std::memcpy(&x.dmin, s + L.dmin() + 2 * l, 2);
}

}  // namespace ckjit::jit::detail
