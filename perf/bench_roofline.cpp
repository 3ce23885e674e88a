// The physical ceilings perf/compare rates each phase against, measured with the Xbyak probe loops
// `ckjit tune` uses (jit/planner/peak_probe): the int8 dot-product rate of the instruction mix this
// CPU's best int8 path runs (vpdpbusd zmm, vpdpbusd ymm, or vpmaddubsw+vpmaddwd on AVX2), the f32
// FMA rate (zmm or ymm), the bf16 dot rate where there is one, all on one pinned core, and DRAM read
// bandwidth with every allowed CPU reading. CKJIT_MAX_ISA caps the mixes as it caps the kernels.
// Prints one human line and one machine-readable "roofline:" line; the per-thread ceilings are the
// one-core rates times the thread count (the kernels' threads run on distinct physical cores).
//   bench_roofline [--threads N]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "jit/planner/peak_probe.h"
#include "runtime/error.h"
#include "topology/machine.h"

int main(int argc, char** argv) {
  int threads = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--threads" && i + 1 < argc) threads = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr, "usage: bench_roofline [--threads N]\n");
      return 2;
    }
  }
  try {
    const ckjit::topo::Machine m = ckjit::topo::detect_machine();
    if (threads <= 0) threads = std::max(1, m.usable_cpus);
    ckjit::planner::PeakProbeOptions o;
    o.compute_seconds = 0.2;
    o.repeats = 5;
    o.dram_buffer_bytes = size_t(1) << 30;  // far beyond any L3 here; its reads are DRAM reads
    const ckjit::MeasuredPeaks p = ckjit::planner::measure_peaks(m, o);
    const double t = threads;
    std::printf("machine: %s\n", m.name().c_str());
    std::printf("ceilings (%d thread%s): int8 %.1f GMAC/s, f32 FMA %.1f GMAC/s, bf16 %.1f GMAC/s, DRAM read %.1f GB/s "
                "(one core: int8 %.1f, f32 %.1f GMAC/s); measured with %s\n",
                threads, threads > 1 ? "s" : "", p.int8_gmacs_per_core * t, p.f32_gmacs_per_core * t,
                p.bf16_gmacs_per_core * t, p.dram_gbps, p.int8_gmacs_per_core, p.f32_gmacs_per_core, p.how.c_str());
    std::printf("roofline: threads=%d int8_gmacs=%.3f f32_gmacs=%.3f bf16_gmacs=%.3f dram_gbs=%.3f\n", threads,
                p.int8_gmacs_per_core * t, p.f32_gmacs_per_core * t, p.bf16_gmacs_per_core * t, p.dram_gbps);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_roofline: %s\n", e.what());
    return 1;
  }
  return 0;
}
