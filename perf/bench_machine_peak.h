#pragma once
// Machine ceilings the kernel benchmark compares against: vpdpbusd zmm throughput (with enough
// independent accumulators to hide its latency) and DRAM read bandwidth, measured with the same
// Xbyak loops `ckjit tune` uses (jit/planner/probe_loops.h).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

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

struct PeakResult { int accs; double gmacs; };

// Best vpdpbusd GMAC/s over several accumulator counts, every team thread running its own loop.
inline PeakResult vnni_peak(Team& team) {
  PeakResult best{0, 0};
  for (int accs : {4, 8, 10, 12, 16, 24}) {
    planner::DotLoop loop(planner::DotProbe::vnni_zmm, accs);
    const int64_t iters = 2'000'000;
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) {
      double t0 = now_s();
      team.run([&](int) { loop.run(iters); });
      runs.push_back(now_s() - t0);
    }
    // Best run: the ceiling this machine can reach (other tenants only ever lower it).
    double gmacs = double(iters) * 4 * accs * 64 * team.size() / *std::min_element(runs.begin(), runs.end()) / 1e9;
    if (gmacs > best.gmacs) best = {accs, gmacs};
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
// alone under-reports the memory system): the best run of the best stream count.
inline double dram_read_gbs(Team& team, size_t bytes) {
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  std::memset(buf, 1, bytes);
  double best = 0;
  for (int streams : {1, 2, 4}) {
    planner::ReadLoop loop(streams, true);
    for (int r = 0; r < 5; ++r) best = std::max(best, read_pass_gbs(team, loop, buf, bytes));
  }
  std::free(buf);
  return best;
}

}  // namespace ckjit::bench
