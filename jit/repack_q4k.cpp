// Load-time repacking of Q4_K rows into 16- or 8-row panels (layout in packed_weights.h).
#include <cstring>
#include <thread>
#include <vector>

#include "jit/packed_weights.h"
#include "runtime/error.h"
#include "runtime/quants/quant_internal.h"

namespace ckjit::jit {

void parallel_ranges(int64_t count, int threads, const std::function<void(int64_t, int64_t)>& fn) {
  if (threads < 1) threads = 1;
  if (threads > count) threads = int(count > 0 ? count : 1);
  if (threads == 1) { fn(0, count); return; }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    int64_t b = count * t / threads, e = count * (t + 1) / threads;
    pool.emplace_back([=, &fn] { fn(b, e); });
  }
  for (auto& th : pool) th.join();
}

namespace detail {

PackedWeights allocate(TensorType type, int64_t n, int64_t k, int panel, int64_t block_bytes) {
  if (panel != 8 && panel != 16) throw Error("repack: panel must be 8 or 16 rows");
  const int64_t kb = type == TensorType::Q8_0 ? quant::QK8_0 : quant::QK_K;
  if (n <= 0 || k <= 0 || k % kb != 0)
    throw Error("repack: need n > 0 rows and k a positive multiple of " + std::to_string(kb) + ", got n=" + std::to_string(n) +
                " k=" + std::to_string(k));
  PackedWeights w;
  w.type = type;
  w.n = n;
  w.k = k;
  w.panel = panel;
  w.n_panels = (n + panel - 1) / panel;
  w.block_bytes = block_bytes;
  w.panel_stride = block_bytes * (k / kb);
  size_t bytes = size_t(w.n_panels * w.panel_stride);
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!p) throw Error("repack: out of memory for " + std::to_string(bytes) + " bytes");
  w.data.reset(static_cast<uint8_t*>(p));
  return w;
}

}  // namespace detail

PackedWeights repack_q4_K(const quant::BlockQ4_K* src, int64_t n, int64_t k, int panel, int threads) {
  const Q4KPanelLayout L{panel};
  PackedWeights w = detail::allocate(TensorType::Q4_K, n, k, panel, L.bytes());
  const int64_t nb = k / quant::QK_K;
  parallel_ranges(w.n_panels, threads, [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      uint8_t* pp = w.data.get() + p * w.panel_stride;
      std::memset(pp, 0, size_t(w.panel_stride));
      for (int l = 0; l < panel; ++l) {
        int64_t row = p * panel + l;
        if (row >= n) break;
        for (int64_t b = 0; b < nb; ++b) {
          const quant::BlockQ4_K& x = src[row * nb + b];
          uint8_t* dst = pp + b * L.bytes();
          for (int c = 0; c < 4; ++c)
            for (int j = 0; j < 8; ++j) std::memcpy(dst + L.qs(c, j) + l * 4, x.qs + 32 * c + 4 * j, 4);
          uint8_t sc[8], mn[8];
          quant::unpack_k4_scales(x.scales, sc, mn);
          for (int s = 0; s < 8; ++s) {
            dst[L.sc(s) + l] = sc[s];
            dst[L.mn(s) + l] = mn[s];
          }
          std::memcpy(dst + L.d() + 2 * l, &x.d, 2);
          std::memcpy(dst + L.dmin() + 2 * l, &x.dmin, 2);
        }
      }
    }
  });
  return w;
}

void unpack_q4_K(const PackedWeights& w, quant::BlockQ4_K* dst) {
  if (w.type != TensorType::Q4_K) throw Error("unpack_q4_K: weights are not Q4_K");
  const Q4KPanelLayout L{w.panel};
  const int64_t nb = w.k / quant::QK_K;
  for (int64_t row = 0; row < w.n; ++row) {
    const uint8_t* pp = w.panel_ptr(row / w.panel);
    int l = int(row % w.panel);
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* s = pp + b * L.bytes();
      quant::BlockQ4_K& x = dst[row * nb + b];
      for (int c = 0; c < 4; ++c)
        for (int j = 0; j < 8; ++j) std::memcpy(x.qs + 32 * c + 4 * j, s + L.qs(c, j) + l * 4, 4);
      uint8_t sc[8], mn[8];
      for (int i = 0; i < 8; ++i) {
        sc[i] = s[L.sc(i) + l];
        mn[i] = s[L.mn(i) + l];
      }
      quant::detail::pack_k4_scales(sc, mn, x.scales);
      std::memcpy(&x.d, s + L.d() + 2 * l, 2);
      std::memcpy(&x.dmin, s + L.dmin() + 2 * l, 2);
    }
  }
}

}  // namespace ckjit::jit
