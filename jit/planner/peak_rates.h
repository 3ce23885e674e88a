#pragma once
// Peak rates the cost model divides by: MACs per second per core for each compute path and bytes
// per second from each cache level and from DRAM. Defaults come from a small per-uarch table (the
// zen4 row was measured on the development machine) or, for unknown CPUs, from the ISA's vector
// width at an assumed clock; a tuned profile may replace them with this machine's measurements.
#include <string>

#include "topology/machine.h"

namespace ckjit::planner {

// How the inner product is computed for a weight type on this ISA.
enum class ComputePath { int8_dot, bf16_dot, f32_fma };
std::string compute_path_name(ComputePath p);

struct PeakRates {
  double int8_gmacs_per_core = 0;  // u8 x s8 dot products (VNNI / AMX) per core
  double bf16_gmacs_per_core = 0;
  double f32_gmacs_per_core = 0;
  double l1_gbps_per_core = 0;     // read bandwidth each core gets from its own caches
  double l2_gbps_per_core = 0;
  double l3_gbps_per_core = 0;
  double dram_gbps = 0;            // whole machine, sustained
  double dram_gbps_per_core = 0;   // what one core alone can pull
  double sync_us = 0;              // one fork + join of the thread pool, per active thread
  // Per task a worker takes: the dispatch, the kernel call and, above all, restarting the weight
  // streams the hardware prefetcher then has to pick up again (dominant for DRAM-bound GEMV).
  double task_us = 0;
  // Extra DRAM time of weights read as interleaved streams: x (1 + penalty (1 - 1/streams)).
  double dram_stream_penalty = 0;
  std::string source;              // where the numbers come from (printed by `ckjit plan`)

  double gmacs_per_core(ComputePath p) const;
};

PeakRates default_peak_rates(const topo::Machine& m);

}  // namespace ckjit::planner
