#pragma once
// Weights re-laid at load time into the column-panel layouts the JIT kernels read.
//
// A weight matrix has n rows of k elements (one row per output column of y = W x). Rows are
// grouped into panels of `panel` rows (16 for zmm kernels, 8 for ymm). A panel stores its
// super-blocks one after another; each panel super-block interleaves the `panel` rows so that one
// vector load fetches 4 consecutive quants of every row. Panels past n are zero-filled (the
// kernels never store those columns). Repacking is lossless: unpack_* returns the original blocks.
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>

#include "runtime/quants/quants.h"
#include "runtime/tensor_type.h"
#include "runtime/thread_pool.h"

namespace ckjit::jit {

struct FreeDeleter { void operator()(void* p) const { std::free(p); } };

// Uninitialised memory for packed weights (at least `bytes`, 64-byte aligned, freed with
// std::free); ckjit::Error naming `what` when out of memory. No huge-page advice: on the KVM
// guest measured, MADV_HUGEPAGE made the first touch of 1.7 GB slower (1.4-5.2 s vs 1.4-1.6 s).
std::unique_ptr<uint8_t, FreeDeleter> alloc_packed(size_t bytes, const char* what);

struct PackedWeights {
  TensorType type = TensorType::Q4_K;
  int64_t n = 0, k = 0;       // rows (output columns) and elements per row
  int panel = 16;             // rows per panel
  int64_t n_panels = 0;
  int64_t block_bytes = 0;    // bytes of one panel super-block
  int64_t panel_stride = 0;   // bytes of one panel (all its super-blocks)
  std::unique_ptr<uint8_t, FreeDeleter> data;  // 64-byte aligned

  const uint8_t* panel_ptr(int64_t p) const { return data.get() + p * panel_stride; }
  int64_t bytes() const { return n_panels * panel_stride; }
};

// Q4_K panel super-block, P = panel rows (all offsets in bytes):
//   qs[4][8][P][4]  at 0:      pair c of sub-blocks, quad j, row l: byte t holds element
//                              64c+4j+t (low nibble, sub-block 2c) and 64c+32+4j+t (high nibble,
//                              sub-block 2c+1) — the row's own qs[32c+4j+t] byte, transposed.
//   sc[8][P]        at 128P:   6-bit sub-block scales, unpacked
//   mn[8][P]        at 136P:   6-bit sub-block mins, unpacked
//   d[P], dmin[P]   at 144P, 146P: the f16 super-block scales
struct Q4KPanelLayout {
  int P;
  int64_t qs(int c, int j) const { return (int64_t(c) * 8 + j) * P * 4; }
  int64_t sc(int s) const { return 128 * P + s * P; }
  int64_t mn(int s) const { return 136 * P + s * P; }
  int64_t d() const { return 144 * P; }
  int64_t dmin() const { return 146 * P; }
  int64_t bytes() const { return 148 * P; }
  int64_t quad(int s, int j) const { return qs(s / 2, j); }  // the byte holding sub-block s, quad j
};

// Q5_K panel super-block, P = panel rows: the 5-bit quants one per byte, then as Q4_K.
//   u[64][P][4] at 0 (quad j = elements 4j..4j+3), sc[8][P] at 256P, mn[8][P] at 264P,
//   d[P] at 272P, dmin[P] at 274P; 280P bytes in all.
struct Q5KPanelLayout {
  int P;
  int64_t u(int j) const { return int64_t(j) * P * 4; }
  int64_t quad(int s, int j) const { return u(8 * s + j); }
  int64_t sc(int s) const { return 256 * P + s * P; }
  int64_t mn(int s) const { return 264 * P + s * P; }
  int64_t d() const { return 272 * P; }
  int64_t dmin() const { return 274 * P; }
  int64_t bytes() const { return 280 * P; }
};

// Q6_K panel super-block, P = panel rows:
//   u[64][P][4]     at 0:      quad j, row l: the unsigned 6-bit quants (0..63) of elements
//                              4j..4j+3, one byte each (ql/qh bits recombined)
//   scp[8][P][2]    at 256P:   signed 8-bit scales of sub-blocks 2i and 2i+1, as a pair per row
//   d[P]            at 272P:   f16 super-block scale; 280P bytes in all (padding to 64 bytes)
struct Q6KPanelLayout {
  int P;
  int64_t u(int j) const { return int64_t(j) * P * 4; }
  int64_t scp(int i) const { return 256 * P + i * P * 2; }
  int64_t d() const { return 272 * P; }
  int64_t bytes() const { return 280 * P; }
};

// Repacks n rows of k elements of Q4_K (row-major blocks) using up to `threads` worker threads.
// Throws ckjit::Error for bad shapes (k not a multiple of 256, panel not 8 or 16). simd = false
// keeps the scalar walk for every panel (the same bytes; tests compare the two).
PackedWeights repack_q4_K(const quant::BlockQ4_K* src, int64_t n, int64_t k, int panel, int threads,
                          bool simd = true);
// Inverse of repack_q4_K: writes the n*k/256 original blocks.
void unpack_q4_K(const PackedWeights& w, quant::BlockQ4_K* dst);

// Q8_0 panel block (32 elements), P = panel rows:
//   qs[8][P][4]  at 0:    quad j, row l: int8 quants of elements 4j..4j+3
//   d[P]         at 32P:  f16 block scale
//   wsum[P]      at 34P:  int32 Σ qs of the row's block (derived, for the unsigned-activation bias)
//   40P bytes in all (padding)
struct Q80PanelLayout {
  int P;
  int64_t qs(int j) const { return int64_t(j) * P * 4; }
  int64_t d() const { return 32 * P; }
  int64_t wsum() const { return 34 * P; }
  int64_t bytes() const { return 40 * P; }
};

PackedWeights repack_q8_0(const quant::BlockQ8_0* src, int64_t n, int64_t k, int panel, int threads,
                          bool simd = true);
void unpack_q8_0(const PackedWeights& w, quant::BlockQ8_0* dst);

PackedWeights repack_q5_K(const quant::BlockQ5_K* src, int64_t n, int64_t k, int panel, int threads);
void unpack_q5_K(const PackedWeights& w, quant::BlockQ5_K* dst);

PackedWeights repack_q6_K(const quant::BlockQ6_K* src, int64_t n, int64_t k, int panel, int threads,
                          bool simd = true);
void unpack_q6_K(const PackedWeights& w, quant::BlockQ6_K* dst);

// While a RepackPoolScope lives, the repacks issued by its thread run on `pool` (the model's
// workers, one pinned per core). Without one they run on threads of their own, created by the
// first repack, which inherit the CPU mask of the thread that created them: a caller pinned to one
// cpu gets helpers on that same cpu (both repack threads on one core: 750 vs 450 ms, measured).
class RepackPoolScope {
 public:
  explicit RepackPoolScope(ThreadPool& pool);
  ~RepackPoolScope();
  RepackPoolScope(const RepackPoolScope&) = delete;
  RepackPoolScope& operator=(const RepackPoolScope&) = delete;

 private:
  ThreadPool* previous_;
};

// Runs fn(0..tasks) on the repack workers (the RepackPoolScope's pool, else threads kept for the
// process): load-time work beside the repacks, e.g. quantizing a float matrix before its repack.
void run_repack_tasks(int tasks, const std::function<void(int)>& fn);

// Runs fn(p) for every panel p of w (its data allocated, not yet written) on up to `threads`
// threads, which take chunks of a few hundred KiB of panels in turn. Each chunk's pages are
// populated in one call (MADV_POPULATE_WRITE) before fn writes them: the first touch of fresh
// pages is most of the load time, and one call per chunk costs a third less than a page fault per
// 4 KiB page (measured on the KVM guest), while the chunk is still in cache when fn writes it.
void for_each_panel(PackedWeights& w, int threads, const std::function<void(int64_t)>& fn);

}  // namespace ckjit::jit
