#pragma once
// The planner's cost model (documented in jit/planner/README.md): for an op and a tiling, the
// bytes each memory level serves, the MACs, and the time each would take at its peak rate; the
// op's expected time is the slowest of them (they overlap) plus the pool's fork/join.
#include <cstddef>
#include <string>
#include <vector>

#include "jit/kernel_spec.h"
#include "jit/planner/peak_rates.h"
#include "runtime/op_shape.h"
#include "topology/machine.h"

namespace ckjit::planner {

// Cache capacities one thread can count on, from the Machine (never from constants, except a
// stated fallback when the topology reported nothing).
struct CacheSizes {
  std::size_t l1 = 0, l2 = 0;       // per core
  std::size_t l3 = 0;               // one instance (shared)
  int l3_cores = 1;                 // physical cores sharing one L3 instance
  int physical_cores = 1;           // usable physical cores (SMT threads beyond them share cores)
  std::vector<std::string> notes;   // fallbacks used
};
CacheSizes cache_sizes(const topo::Machine& m);

// What the ISA and weight type mean for the micro-kernel.
struct KernelTraits {
  ComputePath path = ComputePath::f32_fma;
  int vector_regs = 16;       // 32 zmm with AVX-512, 16 ymm otherwise
  int lanes = 8;              // output columns per vector register (32-bit accumulators)
  int reserved_regs = 2;      // registers the unpacking/scaling of the weight type needs
  double weight_bytes = 4;    // bytes per weight element in memory
  double act_bytes = 4;       // bytes per activation element the kernel reads (Q8_K rows for K-quants)
  int unpack_ops = 0;         // vector ops per weight vector per k step to turn weights into int8/f32
  std::string isa_name;       // "avx512-vnni", ...
  // Weight types the JIT kernels run (Q4_K, Q5_K, Q6_K, Q8_0 on AVX2 / AVX-512): register blocks
  // follow jit::register_block_problem (nr counts weight streams there: panels x matrices), the
  // kernel keeps its sums in registers over the whole of K (kc = K, one quant block in L1 at a
  // time), and compute runs at kernel_efficiency x the register model's share of peak (calibrated
  // on the measured in-cache rate of the kernels, jit/planner/README.md).
  bool jit = false;
  jit::IsaPath jit_isa = jit::IsaPath::Avx512;
  double kernel_efficiency = 1;
};
KernelTraits kernel_traits(const topo::Isa& isa, TensorType wtype);

// Bytes of each block kept in each cache level by a tiling (what must fit).
struct Footprint {
  double l1 = 0;   // one weight micro-panel + one activation micro-panel (kc deep)
  double l2 = 0;   // the resident block: weights nc x kc (N>K>M) or activations mc x kc (M>N>K), plus the other block's panel and the C tile
  double l3 = 0;   // what the order keeps in L3 across blocks, summed over threads sharing it
};
Footprint footprint(const OpShape& s, const Tiling& t, const KernelTraits& k, int threads_per_l3);

struct Cost {
  double macs = 0;
  double bytes_dram = 0, bytes_l3 = 0, bytes_l2 = 0, bytes_l1 = 0;
  double compute_us = 0, dram_us = 0, l3_us = 0, l2_us = 0, l1_us = 0, sync_us = 0;
  double total_us = 0;
  double eff_register = 1, eff_tail = 1, eff_balance = 1;  // shares of peak kept
  std::string bound;  // "compute", "L1", "L2", "L3", "DRAM" or "sync"
  Footprint fp;
};

Cost estimate(const OpShape& s, const Tiling& t, const KernelTraits& k, const CacheSizes& c, const PeakRates& p);

}  // namespace ckjit::planner
