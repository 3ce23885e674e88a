// Panel allocation and the thread split shared by the repack_* functions.
#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "jit/repack_panels.h"

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

std::unique_ptr<uint8_t, FreeDeleter> alloc_packed(size_t bytes, const char* what) {
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (!p) throw Error(std::string(what) + ": out of memory for " + std::to_string(bytes) + " bytes");
  return std::unique_ptr<uint8_t, FreeDeleter>(static_cast<uint8_t*>(p));
}

namespace detail {

bool simd_repack_available() {
  static const bool ok = __builtin_cpu_supports("avx2");
  return ok;
}

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
  w.data = alloc_packed(size_t(w.n_panels * w.panel_stride), "repack");
  return w;
}

}  // namespace detail
}  // namespace ckjit::jit
