// Panel allocation and the thread split shared by the repack_* functions.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>

#include "jit/repack_panels.h"
#include "jit/isa_select.h"

namespace ckjit::jit {

namespace {

thread_local ThreadPool* t_scope_pool = nullptr;  // RepackPoolScope's pool, if any

// Runs fn(0..tasks) on the scope's pool, or else on threads kept for the process (an idle helper
// sleeps on a futex): a fresh std::thread per tensor (~300 of them) often started only after its
// tensor was done on the KVM guest measured (milliseconds, longer than a small tensor's repack).
// While that pool is busy (another thread's repack, or a call from inside a task) the tasks run
// serially on the calling thread instead of waiting.
void run_tasks_here(int tasks, const std::function<void(int)>& fn) {
  const ThreadPool::TaskFn task = [&](size_t t, int) { fn(int(t)); };
  if (t_scope_pool) return t_scope_pool->run(size_t(tasks), task);
  static std::mutex mu;
  static std::unique_ptr<ThreadPool> pool;
  std::unique_lock<std::mutex> lock(mu, std::try_to_lock);
  if (!lock.owns_lock()) {
    for (int t = 0; t < tasks; ++t) fn(t);
    return;
  }
  if (!pool || pool->size() < tasks) {
    ThreadPoolOptions o;
    o.threads = tasks;
    pool.reset();
    pool = std::make_unique<ThreadPool>(o);
  }
  pool->run(size_t(tasks), task);
}

// Faults in the whole pages of [p, p + bytes) for writing; advice only (kernels before 5.14 refuse
// it, and the writes then fault page by page).
void populate_for_write(uint8_t* p, int64_t bytes) {
  static const uintptr_t page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = uintptr_t(p) / page * page, end = (uintptr_t(p) + uintptr_t(bytes) + page - 1) / page * page;
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

}  // namespace

void run_repack_tasks(int tasks, const std::function<void(int)>& fn) { run_tasks_here(tasks, fn); }

RepackPoolScope::RepackPoolScope(ThreadPool& pool) : previous_(t_scope_pool) { t_scope_pool = &pool; }
RepackPoolScope::~RepackPoolScope() { t_scope_pool = previous_; }

void for_each_panel(PackedWeights& w, int threads, const std::function<void(int64_t)>& fn) {
  constexpr int64_t kChunkBytes = 256 << 10;
  const int64_t chunk = std::max<int64_t>(1, kChunkBytes / std::max<int64_t>(1, w.panel_stride));
  const int64_t n_chunks = (w.n_panels + chunk - 1) / chunk;
  auto populate_and_pack = [&](int64_t c) {
    const int64_t p0 = c * chunk, p1 = std::min(w.n_panels, p0 + chunk);
    populate_for_write(w.data.get() + p0 * w.panel_stride, (p1 - p0) * w.panel_stride);
    for (int64_t p = p0; p < p1; ++p) fn(p);
  };
  threads = int(std::min<int64_t>(std::max(1, threads), n_chunks));
  if (threads == 1) {
    for (int64_t c = 0; c < n_chunks; ++c) populate_and_pack(c);
    return;
  }
  // Chunks are claimed one at a time rather than split in fixed ranges: a helper that starts late
  // (its vCPU busy on the host) takes fewer, and no thread waits for another's half at the end.
  std::atomic<int64_t> next{0};
  run_tasks_here(threads, [&](int) {
    for (int64_t c; (c = next.fetch_add(1)) < n_chunks;) populate_and_pack(c);
  });
}

std::unique_ptr<uint8_t, FreeDeleter> alloc_packed(size_t bytes, const char* what) {
  void* p = std::aligned_alloc(64, (std::max<size_t>(bytes, 1) + 63) / 64 * 64);
  if (!p) throw Error(std::string(what) + ": out of memory for " + std::to_string(bytes) + " bytes");
  return std::unique_ptr<uint8_t, FreeDeleter>(static_cast<uint8_t*>(p));
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
  w.data = alloc_packed(size_t(w.n_panels * w.panel_stride), "repack");
  return w;
}

}  // namespace detail
}  // namespace ckjit::jit
