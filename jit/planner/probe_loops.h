#pragma once
// Machine-ceiling loops, generated with Xbyak so that what runs is exactly what we say runs: the
// compiler cannot merge "independent" chains (GCC turned the first C++ probe's 12 identical
// vpdpbusd chains into one and reported 2x the real peak) nor reorder the memory reads.
// Used by `ckjit tune` (peak_probe) and by the kernel benchmarks in perf/.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ckjit::planner {

// Dot-product instruction mixes a core can be measured on.
enum class DotProbe {
  vnni_zmm,   // vpdpbusd zmm (AVX512-VNNI): 64 u8 x s8 MACs
  vnni_ymm,   // vpdpbusd ymm, VEX (AVX-VNNI): 32 MACs
  avx2_int8,  // vpmaddubsw + vpmaddwd + vpaddd ymm: 32 MACs
  bf16_zmm,   // vdpbf16ps zmm: 32 MACs
  fma_zmm,    // vfmadd231ps zmm: 16 MACs
  fma_ymm,    // vfmadd231ps ymm: 8 MACs
};
const char* dot_probe_name(DotProbe p);

// `accs` independent accumulator chains, unrolled 4x; run(iters) executes iters x 4 x accs
// instructions of the mix. Throws ckjit::Error when accs does not fit the register file.
class DotLoop {
 public:
  DotLoop(DotProbe kind, int accs);
  ~DotLoop();
  DotLoop(const DotLoop&) = delete;
  DotLoop& operator=(const DotLoop&) = delete;
  // Runs the loop; returns the MACs done.
  double run(int64_t iters) const;
  int accs() const { return accs_; }

 private:
  struct Code;
  std::unique_ptr<Code> code_;
  int accs_;
  double macs_per_iter_;
};

// Sums `streams` equal, contiguous parts of [p, p + bytes) at once, 64 bytes from each part in
// turn (zmm loads, or ymm pairs without AVX-512): what a kernel reading several weight panels
// side by side asks of the memory system. bytes must be a multiple of 512 x streams. Returns the sum
// of every 32-bit word read, mod 2^32.
class ReadLoop {
 public:
  ReadLoop(int streams, bool avx512);
  ~ReadLoop();
  ReadLoop(const ReadLoop&) = delete;
  ReadLoop& operator=(const ReadLoop&) = delete;
  uint32_t run(const void* p, std::size_t bytes) const;
  int streams() const { return streams_; }

 private:
  struct Code;
  std::unique_ptr<Code> code_;
  int streams_;
};

}  // namespace ckjit::planner
