#include "jit/planner/peak_rates.h"

namespace ckjit::planner {

std::string compute_path_name(ComputePath p) {
  switch (p) {
    case ComputePath::int8_dot: return "int8-dot";
    case ComputePath::bf16_dot: return "bf16-dot";
    case ComputePath::f32_fma: return "f32-fma";
  }
  return "?";
}

double PeakRates::gmacs_per_core(ComputePath p) const {
  switch (p) {
    case ComputePath::int8_dot: return int8_gmacs_per_core;
    case ComputePath::bf16_dot: return bf16_gmacs_per_core;
    case ComputePath::f32_fma: return f32_gmacs_per_core;
  }
  return f32_gmacs_per_core;
}

PeakRates default_peak_rates(const topo::Machine& m) {
  PeakRates r;
  const topo::Isa& isa = m.isa;
  if (m.uarch == "zen4" && isa.avx512vnni) {
    // Measured on the development machine (EPYC zen4, 2 cores): one vpdpbusd zmm per cycle,
    // 235 GMAC/s per core; vdpbf16ps zmm 118, vfmadd zmm 59 (the same one-per-cycle issue);
    // cache bandwidths are zen4's per-cycle widths (L1 2x64 B, L2 64 B, L3 32 B) at ~4 GHz.
    r.int8_gmacs_per_core = 235;
    r.bf16_gmacs_per_core = isa.avx512bf16 ? 118 : 0;
    r.f32_gmacs_per_core = 59;
    r.l1_gbps_per_core = 500;
    r.l2_gbps_per_core = 250;
    r.l3_gbps_per_core = 120;
    r.dram_gbps = 44;
    r.dram_gbps_per_core = 30;
    r.sync_us = 1.5;
    // perf/PLANNER_RESULTS.md: 2B decode GEMV on 2 threads, 16-48 tasks per thread against 1-3
    // cost 1.2-2.6 us per extra task.
    r.task_us = 1.5;
    // Same benchmark: 1 weight stream per core 45 GB/s, 2 streams 34, 4 streams 29 (2 threads).
    r.dram_stream_penalty = 0.8;
    r.source = "defaults for zen4 (measured on the dev machine: int8 235 GMAC/s/core, DRAM 44 GB/s)";
    return r;
  }
  // Unknown uarch: per-cycle widths from the ISA at an assumed 3 GHz, two vector pipes.
  const double ghz = 3.0;
  const double vbytes = isa.avx512f ? 64 : isa.avx2 ? 32 : 16;
  const double pipes = 2;
  double int8_per_cycle = isa.amx_usable       ? 1024  // AMX tile dot products
                          : (isa.avx512vnni || isa.avx_vnni) ? pipes * vbytes
                          : pipes * vbytes / 2;        // vpmaddubsw + vpmaddwd
  r.int8_gmacs_per_core = int8_per_cycle * ghz;
  r.bf16_gmacs_per_core = isa.avx512bf16 ? pipes * vbytes / 2 * ghz : 0;
  r.f32_gmacs_per_core = pipes * vbytes / 4 * ghz;
  r.l1_gbps_per_core = 2 * vbytes * ghz;
  r.l2_gbps_per_core = 64 * ghz;
  r.l3_gbps_per_core = 32 * ghz;
  r.dram_gbps = 44;
  r.dram_gbps_per_core = 20;
  r.sync_us = 1.5;
  r.task_us = 1.5;                // as measured on zen4 (no better guess)
  r.dram_stream_penalty = 0.8;
  r.source = "estimated from the ISA (" + std::string(isa.avx512f ? "512" : isa.avx2 ? "256" : "128") +
             "-bit vectors, 2 pipes, assumed 3 GHz, DRAM 44 GB/s); run `ckjit tune` to measure";
  return r;
}

}  // namespace ckjit::planner
