#pragma once
// Measures the peak rates the cost model divides by, on this machine: dot-product throughput per
// core for each compute path the ISA has (independent accumulators, register operands), DRAM read
// bandwidth with one thread and with the whole budget, and the thread pool's fork/join cost.
// `ckjit tune` stores the result in the profile; the planner then uses it instead of defaults.
#include <cstddef>
#include <cstdio>

#include "jit/planner/peak_rates.h"
#include "jit/planner/profile.h"
#include "topology/machine.h"

namespace ckjit::planner {

struct PeakProbeOptions {
  std::size_t dram_buffer_bytes = 0;  // 0: 8 x L3 (at least 64 MiB, at most 1 GiB)
  double compute_seconds = 0.05;      // per compute probe
  int repeats = 3;                    // best of
  std::FILE* progress = nullptr;
};

// Throws ckjit::Error only when the buffer cannot be allocated.
MeasuredPeaks measure_peaks(const topo::Machine& m, const PeakProbeOptions& opts = {});

// Defaults with every measured (non-zero) rate replaced; `source` says so.
PeakRates apply_measured(PeakRates defaults, const MeasuredPeaks& measured);

}  // namespace ckjit::planner
