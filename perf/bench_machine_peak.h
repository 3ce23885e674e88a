#pragma once
// Machine ceilings the kernel benchmarks compare against: the throughput of the int8 dot mix of
// the ISA path timed (with enough independent accumulators to hide its latency) and DRAM read
// bandwidth, measured with the same Xbyak loops `ckjit tune` uses (jit/planner/probe_loops.h).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "jit/kernel_spec.h"
#include "jit/planner/probe_loops.h"
#include "perf/bench_team.h"

namespace ckjit::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The int8 dot-product mix an ISA path's kernels are built on (as `ckjit tune` measures it).
inline planner::DotProbe int8_probe(jit::IsaPath path) {
  return path == jit::IsaPath::Avx2 ? planner::DotProbe::avx2_int8
         : path == jit::IsaPath::AvxVnni ? planner::DotProbe::vnni_ymm : planner::DotProbe::vnni_zmm;
}

struct PeakResult { int accs; double gmacs; const char* mix; };

// Best GMAC/s of `probe` over several accumulator counts (each within the probe's register limit:
// 30 zmm, 14 ymm, 6 for avx2_int8, whose chains need a product register each), every team
// thread running its own loop.
inline PeakResult int8_peak(Team& team, planner::DotProbe probe) {
  PeakResult best{0, 0, planner::dot_probe_name(probe)};
  const std::vector<int> accs_options = probe == planner::DotProbe::avx2_int8 ? std::vector<int>{2, 3, 4, 5, 6}
                                        : probe == planner::DotProbe::vnni_ymm ? std::vector<int>{4, 6, 8, 10, 12, 14}
                                                                               : std::vector<int>{4, 8, 10, 12, 16, 24};
  for (int accs : accs_options) {
    planner::DotLoop loop(probe, accs);
    const int64_t iters = 2'000'000;
    double macs = 0;  // per thread
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) {
      double t0 = now_s();
      team.run([&](int t) {
        double m = loop.run(iters);
        if (t == 0) macs = m;
      });
      runs.push_back(now_s() - t0);
    }
    // Best run: the ceiling this machine can reach (other tenants only ever lower it).
    double gmacs = macs * team.size() / *std::min_element(runs.begin(), runs.end()) / 1e9;
    if (gmacs > best.gmacs) best = {accs, gmacs, best.mix};
  }
  return best;
}

// One read pass over [buf, buf + bytes) split across the team, each share read by `loop`: GB/s.
inline double read_pass_gbs(Team& team, const planner::ReadLoop& loop, const uint8_t* buf, size_t bytes) {
  const size_t unit = size_t(512) * size_t(loop.streams());
  const size_t share = bytes / size_t(team.size()) / unit * unit;
  double t0 = now_s();
  team.run([&](int t) { loop.run(buf + share * size_t(t), share); });
  return double(share) * team.size() / (now_s() - t0) / 1e9;
}

// DRAM read GB/s over a buffer far larger than the last-level cache, split across the team, each
// share read as 1, 2 or 4 side-by-side streams (kernels read several panels at once; one stream
// alone under-reports the memory system): the best run of the best stream count. avx512: zmm
// loads (the CPU must allow AVX-512), else ymm pairs.
inline double dram_read_gbs(Team& team, size_t bytes, bool avx512) {
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  std::memset(buf, 1, bytes);
  double best = 0;
  for (int streams : {1, 2, 4}) {
    planner::ReadLoop loop(streams, avx512);
    for (int r = 0; r < 5; ++r) best = std::max(best, read_pass_gbs(team, loop, buf, bytes));
  }
  std::free(buf);
  return best;
}

}  // namespace ckjit::bench
