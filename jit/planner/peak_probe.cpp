#include "jit/planner/peak_probe.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>

#include "runtime/cpu_budget.h"
#include "runtime/error.h"
#include "runtime/thread_pool.h"

namespace ckjit::planner {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

volatile int g_seed = 1;        // inputs the compiler cannot see through
volatile int64_t g_sink = 0;    // results it must keep

// Each probe runs `iters` steps of 12 independent dot-product chains (more than latency x
// throughput on current cores) and returns the MACs done. Named accumulators, not an array:
// at -O2 an array of vectors would live on the stack and time store-to-load forwarding instead.
#define CKJIT_12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
__attribute__((target("avx512f,avx512vnni"))) double probe_vnni_zmm(long iters) {
  __m512i a = _mm512_set1_epi8(char(g_seed)), b = _mm512_set1_epi8(char(g_seed + 1));
#define DECL(i) __m512i c##i = _mm512_setzero_si512();
#define STEP(i) c##i = _mm512_dpbusd_epi32(c##i, a, b);
#define SUM(i) s = _mm512_add_epi32(s, c##i);
  CKJIT_12(DECL)
  for (long i = 0; i < iters; ++i) { CKJIT_12(STEP) }
  __m512i s = _mm512_setzero_si512();
  CKJIT_12(SUM)
#undef DECL
#undef STEP
#undef SUM
  int32_t out[16];
  _mm512_storeu_si512(out, s);
  g_sink = out[0];
  return double(iters) * 12 * 64;
}

__attribute__((target("avx2,avxvnni"))) double probe_vnni_ymm(long iters) {
  __m256i a = _mm256_set1_epi8(char(g_seed)), b = _mm256_set1_epi8(char(g_seed + 1));
#define DECL(i) __m256i c##i = _mm256_setzero_si256();
#define STEP(i) c##i = _mm256_dpbusd_avx_epi32(c##i, a, b);
#define SUM(i) s = _mm256_add_epi32(s, c##i);
  CKJIT_12(DECL)
  for (long i = 0; i < iters; ++i) { CKJIT_12(STEP) }
  __m256i s = _mm256_setzero_si256();
  CKJIT_12(SUM)
#undef DECL
#undef STEP
#undef SUM
  g_sink = _mm256_extract_epi32(s, 0);
  return double(iters) * 12 * 32;
}

// Without VNNI: vpmaddubsw + vpmaddwd + vpaddd per 32 u8 x s8 products.
__attribute__((target("avx2"))) double probe_avx2_int8(long iters) {
  __m256i a = _mm256_set1_epi8(char(g_seed)), b = _mm256_set1_epi8(char(g_seed + 1)), one = _mm256_set1_epi16(1);
#define DECL(i) __m256i c##i = _mm256_setzero_si256();
#define STEP(i) c##i = _mm256_add_epi32(c##i, _mm256_madd_epi16(_mm256_maddubs_epi16(a, b), one));
#define SUM(i) s = _mm256_add_epi32(s, c##i);
  CKJIT_12(DECL)
  for (long i = 0; i < iters; ++i) { CKJIT_12(STEP) }
  __m256i s = _mm256_setzero_si256();
  CKJIT_12(SUM)
#undef DECL
#undef STEP
#undef SUM
  g_sink = _mm256_extract_epi32(s, 0);
  return double(iters) * 12 * 32;
}

__attribute__((target("avx512f,avx512bf16"))) double probe_bf16_zmm(long iters) {
  __m512bh a = (__m512bh)_mm512_set1_epi16(short(0x3f80 + (g_seed & 1)));
  __m512bh b = (__m512bh)_mm512_set1_epi16(short(0x3f80));
#define DECL(i) __m512 c##i = _mm512_setzero_ps();
#define STEP(i) c##i = _mm512_dpbf16_ps(c##i, a, b);
#define SUM(i) s = _mm512_add_ps(s, c##i);
  CKJIT_12(DECL)
  for (long i = 0; i < iters; ++i) { CKJIT_12(STEP) }
  __m512 s = _mm512_setzero_ps();
  CKJIT_12(SUM)
#undef DECL
#undef STEP
#undef SUM
  float out[16];
  _mm512_storeu_ps(out, s);
  g_sink = int64_t(out[0]);
  return double(iters) * 12 * 32;
}

__attribute__((target("avx512f"))) double probe_fma_zmm(long iters) {
  __m512 a = _mm512_set1_ps(float(g_seed) * 1e-9f), b = _mm512_set1_ps(1.0f);
#define DECL(i) __m512 c##i = _mm512_setzero_ps();
#define STEP(i) c##i = _mm512_fmadd_ps(a, b, c##i);
#define SUM(i) s = _mm512_add_ps(s, c##i);
  CKJIT_12(DECL)
  for (long i = 0; i < iters; ++i) { CKJIT_12(STEP) }
  __m512 s = _mm512_setzero_ps();
  CKJIT_12(SUM)
#undef DECL
#undef STEP
#undef SUM
  float out[16];
  _mm512_storeu_ps(out, s);
  g_sink = int64_t(out[0]);
  return double(iters) * 12 * 16;
}

__attribute__((target("avx2,fma"))) double probe_fma_ymm(long iters) {
  __m256 a = _mm256_set1_ps(float(g_seed) * 1e-9f), b = _mm256_set1_ps(1.0f);
#define DECL(i) __m256 c##i = _mm256_setzero_ps();
#define STEP(i) c##i = _mm256_fmadd_ps(a, b, c##i);
#define SUM(i) s = _mm256_add_ps(s, c##i);
  CKJIT_12(DECL)
  for (long i = 0; i < iters; ++i) { CKJIT_12(STEP) }
  __m256 s = _mm256_setzero_ps();
  CKJIT_12(SUM)
#undef DECL
#undef STEP
#undef SUM
  float out[8];
  _mm256_storeu_ps(out, s);
  g_sink = int64_t(out[0]);
  return double(iters) * 12 * 8;
}

// GMAC/s of a probe: calibrate the iteration count to ~`seconds`, best of `repeats`.
double gmacs(double (*probe)(long), double seconds, int repeats) {
  long iters = 1000;
  for (;;) {
    auto t0 = Clock::now();
    probe(iters);
    double s = seconds_since(t0);
    if (s > seconds / 10 || iters > (1L << 40)) {
      iters = long(double(iters) * seconds / std::max(s, 1e-9));
      break;
    }
    iters *= 4;
  }
  iters = std::max(iters, 1000L);
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    auto t0 = Clock::now();
    double macs = probe(iters);
    best = std::max(best, macs / seconds_since(t0) / 1e9);
  }
  return best;
}

uint64_t sum_words(const uint64_t* p, std::size_t n) {
  // Four named chains (an array would live on the stack at -O2), eight loads per round.
  uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    s0 += p[i] + p[i + 4];
    s1 += p[i + 1] + p[i + 5];
    s2 += p[i + 2] + p[i + 6];
    s3 += p[i + 3] + p[i + 7];
  }
  for (; i < n; ++i) s0 += p[i];
  return s0 + s1 + s2 + s3;
}

// GB/s reading the whole buffer with the pool's threads, each its own contiguous share.
double read_bandwidth(ThreadPool& pool, const uint64_t* buf, std::size_t words, int repeats) {
  const std::size_t T = std::size_t(pool.size());
  double best = 0;
  for (int r = 0; r < repeats; ++r) {
    std::vector<uint64_t> partial(T);
    auto t0 = Clock::now();
    pool.run(T, [&](std::size_t t, int) {
      std::size_t b = words * t / T, e = words * (t + 1) / T;
      partial[t] = sum_words(buf + b, e - b);
    });
    double s = seconds_since(t0);
    uint64_t all = 0;
    for (auto x : partial) all += x;
    g_sink = int64_t(all);
    best = std::max(best, double(words * 8) / s / 1e9);
  }
  return best;
}

}  // namespace

MeasuredPeaks measure_peaks(const topo::Machine& m, const PeakProbeOptions& opts) {
  MeasuredPeaks p;
  const topo::Isa& isa = m.isa;
  const CpuBudget budget = cpu_budget(m);
  auto note = [&](const char* what) {
    if (opts.progress) std::fprintf(opts.progress, "peaks: measuring %s\n", what);
  };
  std::string how;
  {
    // Compute probes on one pinned core (the pool pins the calling thread).
    ThreadPool one(pool_options(budget, choose_worker_cpus(budget, 1, false)));
    note("int8 dot-product rate");
    if (isa.avx512vnni) p.int8_gmacs_per_core = gmacs(probe_vnni_zmm, opts.compute_seconds, opts.repeats), how += "int8 vpdpbusd zmm";
    else if (isa.avx_vnni) p.int8_gmacs_per_core = gmacs(probe_vnni_ymm, opts.compute_seconds, opts.repeats), how += "int8 vpdpbusd ymm";
    else if (isa.avx2) p.int8_gmacs_per_core = gmacs(probe_avx2_int8, opts.compute_seconds, opts.repeats), how += "int8 vpmaddubsw+vpmaddwd ymm";
    if (isa.avx512bf16) {
      note("bf16 dot-product rate");
      p.bf16_gmacs_per_core = gmacs(probe_bf16_zmm, opts.compute_seconds, opts.repeats);
      how += ", bf16 vdpbf16ps zmm";
    }
    note("f32 FMA rate");
    if (isa.avx512f) p.f32_gmacs_per_core = gmacs(probe_fma_zmm, opts.compute_seconds, opts.repeats), how += ", f32 vfmadd zmm";
    else if (isa.avx2 && isa.fma) p.f32_gmacs_per_core = gmacs(probe_fma_ymm, opts.compute_seconds, opts.repeats), how += ", f32 vfmadd ymm";
    how += " (12 chains, one core)";
  }

  std::size_t bytes = opts.dram_buffer_bytes;
  if (!bytes) bytes = std::clamp<std::size_t>(8 * std::max<std::size_t>(m.cache_bytes(3), m.cache_bytes(2)), 64u << 20, 1u << 30);
  const std::size_t words = bytes / 8;
  std::unique_ptr<uint64_t[]> buf(new (std::nothrow) uint64_t[words]);
  if (!buf) throw Error("peak probe: cannot allocate " + std::to_string(bytes >> 20) + " MiB for the DRAM probe");
  std::vector<int> all_cpus = choose_worker_cpus(budget, budget.max_threads, false);
  {
    ThreadPool all(pool_options(budget, all_cpus));
    // First touch from the readers (pages land on their NUMA nodes).
    all.run(std::size_t(all.size()), [&](std::size_t t, int) {
      std::size_t b = words * t / std::size_t(all.size()), e = words * (t + 1) / std::size_t(all.size());
      for (std::size_t i = b; i < e; ++i) buf[i] = i;
    });
    note("DRAM read bandwidth");
    p.dram_gbps = read_bandwidth(all, buf.get(), words, opts.repeats);
    if (all.size() > 1) {
      note("fork/join cost");
      const int runs = 2000;
      auto t0 = Clock::now();
      for (int r = 0; r < runs; ++r) all.run(std::size_t(all.size()), [](std::size_t, int) {});
      p.sync_us = seconds_since(t0) * 1e6 / runs / all.size();
    }
  }
  {
    ThreadPool one(pool_options(budget, choose_worker_cpus(budget, 1, false)));
    p.dram_gbps_per_core = read_bandwidth(one, buf.get(), words, opts.repeats);
  }
  p.dram_gbps = std::max(p.dram_gbps, p.dram_gbps_per_core);
  how += "; DRAM: reads of " + std::to_string(bytes >> 20) + " MiB with 1 and " + std::to_string(all_cpus.size()) +
         " threads; sync: empty pool runs";
  p.how = how;
  return p;
}

PeakRates apply_measured(PeakRates r, const MeasuredPeaks& m) {
  auto take = [](double& field, double v) {
    if (v > 0) field = v;
  };
  take(r.int8_gmacs_per_core, m.int8_gmacs_per_core);
  take(r.bf16_gmacs_per_core, m.bf16_gmacs_per_core);
  take(r.f32_gmacs_per_core, m.f32_gmacs_per_core);
  take(r.dram_gbps, m.dram_gbps);
  take(r.dram_gbps_per_core, m.dram_gbps_per_core);
  take(r.sync_us, m.sync_us);
  char buf[200];
  std::snprintf(buf, sizeof buf, "measured by `ckjit tune` (int8 %.0f GMAC/s/core, DRAM %.1f GB/s, %.1f GB/s one core)",
                r.int8_gmacs_per_core, r.dram_gbps, r.dram_gbps_per_core);
  r.source = buf;
  return r;
}

}  // namespace ckjit::planner
