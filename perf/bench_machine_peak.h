#pragma once
// Machine ceilings the kernel benchmark compares against: vpdpbusd zmm throughput (with enough
// independent accumulators to hide its latency) and DRAM read bandwidth.
#include <xbyak/xbyak.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "perf/bench_team.h"

namespace ckjit::bench {

inline double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// void loop(int64_t iterations): `accs` independent vpdpbusd zmm chains per iteration.
struct VnniLoop : Xbyak::CodeGenerator {
  explicit VnniLoop(int accs) : Xbyak::CodeGenerator(4096, Xbyak::DontSetProtectRWE) {
    for (int i = 0; i < accs; ++i) vpxord(Xbyak::Zmm(i), Xbyak::Zmm(i), Xbyak::Zmm(i));
    vpternlogd(zmm30, zmm30, zmm30, 0xff);
    vpternlogd(zmm31, zmm31, zmm31, 0xff);
    Xbyak::Label l;
    L(l);
    for (int u = 0; u < 4; ++u)
      for (int i = 0; i < accs; ++i) vpdpbusd(Xbyak::Zmm(i), zmm30, zmm31);
    dec(rdi);
    jnz(l);
    vzeroupper();
    ret();
    setProtectModeRE();
  }
};

// void read(const void* p, int64_t bytes): sums 512-byte chunks with zmm loads.
struct ReadLoop : Xbyak::CodeGenerator {
  ReadLoop() : Xbyak::CodeGenerator(4096, Xbyak::DontSetProtectRWE) {
    for (int i = 0; i < 8; ++i) vpxord(Xbyak::Zmm(i), Xbyak::Zmm(i), Xbyak::Zmm(i));
    Xbyak::Label l;
    L(l);
    for (int i = 0; i < 8; ++i) vpaddd(Xbyak::Zmm(i), Xbyak::Zmm(i), ptr[rdi + i * 64]);
    add(rdi, 512);
    sub(rsi, 512);
    jg(l);
    vzeroupper();
    ret();
    setProtectModeRE();
  }
};

struct PeakResult { int accs; double gmacs; };

// Best vpdpbusd GMAC/s over several accumulator counts, every team thread running its own loop.
inline PeakResult vnni_peak(Team& team) {
  PeakResult best{0, 0};
  for (int accs : {4, 8, 10, 12, 16, 24}) {
    VnniLoop code(accs);
    auto fn = code.getCode<void (*)(int64_t)>();
    const int64_t iters = 2'000'000;
    std::vector<double> runs;
    for (int r = 0; r < 5; ++r) {
      double t0 = now_s();
      team.run([&](int) { fn(iters); });
      runs.push_back(now_s() - t0);
    }
    // Best run: the ceiling this machine can reach (other tenants only ever lower it).
    double gmacs = double(iters) * 4 * accs * 64 * team.size() / *std::min_element(runs.begin(), runs.end()) / 1e9;
    if (gmacs > best.gmacs) best = {accs, gmacs};
  }
  return best;
}

// DRAM read GB/s over a buffer far larger than the last-level cache, split across the team.
inline double dram_read_gbs(Team& team, size_t bytes) {
  auto* buf = static_cast<uint8_t*>(std::aligned_alloc(4096, bytes));
  std::memset(buf, 1, bytes);
  ReadLoop code;
  auto fn = code.getCode<void (*)(const void*, int64_t)>();
  std::vector<double> runs;
  for (int r = 0; r < 5; ++r) {
    double t0 = now_s();
    team.run([&](int t) {
      size_t chunk = bytes / team.size() / 512 * 512;
      fn(buf + chunk * t, int64_t(chunk));
    });
    runs.push_back(now_s() - t0);
  }
  std::free(buf);
  return double(bytes) / *std::min_element(runs.begin(), runs.end()) / 1e9;  // best run, as for the peak
}

}  // namespace ckjit::bench
