// Panel allocation and the thread split shared by the repack_* functions.
#include <sys/mman.h>
#include <unistd.h>

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

namespace {

// Faults in the whole pages of [p, p + bytes) for writing; advice only (kernels before 5.14 refuse
// it, and the writes then fault page by page).
void populate_for_write(uint8_t* p, int64_t bytes) {
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = uintptr_t(p) / page * page, end = (uintptr_t(p) + uintptr_t(bytes) + page - 1) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

}  // namespace

void for_each_panel(PackedWeights& w, int threads, const std::function<void(int64_t)>& fn) {
  constexpr int64_t kChunkBytes = 256 << 10;
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / std::max<int64_t>(1, w.panel_stride));
  parallel_ranges(w.n_panels, threads, [&](int64_t p0, int64_t p1) {
    for (int64_t c0 = p0; c0 < p1; c0 += chunk) {
      const int64_t c1 = std::min(p1, c0 + chunk);
      populate_for_write(w.data.get() + c0 * w.panel_stride, (c1 - c0) * w.panel_stride);
      for (int64_t p = c0; p < c1; ++p) fn(p);
    }
  });
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
