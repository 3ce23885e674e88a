#include "jit/planner/peak_probe.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <new>

#include "jit/planner/probe_loops.h"
#include "topology/cpu_budget.h"
#include "runtime/error.h"
#include "runtime/thread_pool.h"

namespace ckjit::planner {
namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// GMAC/s of one instruction mix: best over accumulator counts (enough independent chains to cover
// latency x throughput on any current core), each calibrated to ~`seconds`, best of `repeats`.
double gmacs(DotProbe kind, std::initializer_list<int> accs_options, double seconds, int repeats) {
  double best = 0;
  for (int accs : accs_options) {
    DotLoop loop(kind, accs);
    int64_t iters = 256;
    for (;;) {
      auto t0 = Clock::now();
      loop.run(iters);
      double s = seconds_since(t0);
      if (s > seconds / 10 || iters > (int64_t(1) << 40)) {
        iters = std::max<int64_t>(256, int64_t(double(iters) * seconds / std::max(s, 1e-9)));
        break;
      }
      iters *= 4;
    }
    for (int r = 0; r < repeats; ++r) {
      auto t0 = Clock::now();
      double macs = loop.run(iters);
      best = std::max(best, macs / seconds_since(t0) / 1e9);
    }
  }
  return best;
}

// GB/s reading the whole buffer with the pool's threads, each its own contiguous share read as
// 1, 2 or 4 side-by-side streams (kernels read several weight panels at once; a single stream
// under-reports what the memory system gives them): the best of all.
double read_bandwidth(ThreadPool& pool, const uint8_t* buf, std::size_t bytes, bool avx512, int repeats) {
  const std::size_t T = std::size_t(pool.size());
  double best = 0;
  for (int streams : {1, 2, 4}) {
    ReadLoop loop(streams, avx512);
    const std::size_t unit = std::size_t(512) * std::size_t(streams);
    const std::size_t share = bytes / T / unit * unit;
    for (int r = 0; r < repeats; ++r) {
      auto t0 = Clock::now();
      pool.run(T, [&](std::size_t t, int) { loop.run(buf + share * t, share); });
      best = std::max(best, double(share * T) / seconds_since(t0) / 1e9);
    }
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
    const double sec = opts.compute_seconds;
    const int rep = opts.repeats;
    auto measure = [&](DotProbe kind, std::initializer_list<int> accs, double& field) {
      field = gmacs(kind, accs, sec, rep);
      how += (how.empty() ? "" : ", ") + std::string(dot_probe_name(kind));
    };
    if (isa.avx512vnni) measure(DotProbe::vnni_zmm, {8, 12, 16, 24}, p.int8_gmacs_per_core);
    else if (isa.avx_vnni) measure(DotProbe::vnni_ymm, {6, 8, 12}, p.int8_gmacs_per_core);
    else if (isa.avx2) measure(DotProbe::avx2_int8, {4, 6}, p.int8_gmacs_per_core);
    if (isa.avx512bf16) {
      note("bf16 dot-product rate");
      measure(DotProbe::bf16_zmm, {8, 12, 16, 24}, p.bf16_gmacs_per_core);
    }
    note("f32 FMA rate");
    if (isa.avx512f) measure(DotProbe::fma_zmm, {8, 12, 16, 24}, p.f32_gmacs_per_core);
    else if (isa.avx2 && isa.fma) measure(DotProbe::fma_ymm, {6, 8, 12}, p.f32_gmacs_per_core);
    how += " (Xbyak loops, best of 4-24 independent chains, one core)";
  }

  std::size_t bytes = opts.dram_buffer_bytes;
  if (!bytes) bytes = std::clamp<std::size_t>(8 * std::max<std::size_t>(m.cache_bytes(3), m.cache_bytes(2)), 64u << 20, 1u << 30);
  const std::size_t words = bytes / 8;
  std::unique_ptr<uint64_t[]> buf(new (std::nothrow) uint64_t[words]);
  const auto* bytes_at = reinterpret_cast<const uint8_t*>(buf.get());
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
    p.dram_gbps = read_bandwidth(all, bytes_at, bytes, isa.avx512f, opts.repeats);
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
    p.dram_gbps_per_core = read_bandwidth(one, bytes_at, bytes, isa.avx512f, opts.repeats);
  }
  p.dram_gbps = std::max(p.dram_gbps, p.dram_gbps_per_core);
  how += "; DRAM: reads of " + std::to_string(bytes >> 20) + " MiB with 1 and " + std::to_string(all_cpus.size()) +
         " threads, best of 1/2/4 side-by-side streams; sync: empty pool runs";
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
