#include "jit/planner/cost_model.h"

#include <algorithm>
#include <cmath>

#include "jit/isa_select.h"
#include "jit/weight_kernels.h"

namespace ckjit::planner {
namespace {
double ceil_div(double a, double b) { return std::ceil(a / b); }

// The JIT kernels' measured in-cache rate over what the register model predicts for the block it
// was measured with (perf/RESULTS.md, zen4, 1 thread): Q4_K SwiGLU/GEMM with mr=6 x 2 streams run
// at 172 GMAC/s per core against a vpdpbusd zmm peak of 235 (one per cycle), and e_reg for the
// block is 12 dots / (12 + 2 x 2 unpack ops) = 0.75, so the kernel keeps 172 / (235 x 0.75) = 0.976
// of the model's figure (the unpack ops are nearly free on zen4; sub-block scale multiplies and
// float updates, which the register model does not count, take the rest). The other types are
// not measured in isolation yet and use the same factor.
constexpr double kJitKernelEfficiency = 0.976;

void set_jit_traits(const topo::Isa& isa, TensorType wtype, KernelTraits& k) {
  const jit::WeightKernels* kernels = jit::weight_kernels(wtype);
  const bool has_kernels = kernels != nullptr;
  const bool avx512 = isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512vnni;
  if (!has_kernels || !(avx512 || isa.avx2)) return;
  k.jit = true;
  // Without AVX-512 the 8-lane kernels run, with vpdpbusd where the CPU has AVX-VNNI. AMX tiles
  // serve ops of 16 rows or more, and only where a tuned profile chose them (the planner plans
  // AVX-512 otherwise: make_context).
  k.jit_isa = jit::isa_runs(jit::IsaPath::Amx, isa)      ? jit::IsaPath::Amx
              : avx512                                    ? jit::IsaPath::Avx512
              : jit::isa_runs(jit::IsaPath::AvxVnni, isa) ? jit::IsaPath::AvxVnni
                                                          : jit::IsaPath::Avx2;
  // The kernels read the repacked panels, not the file's blocks: Q5_K and Q6_K keep one byte per
  // quant there (280 bytes per 256 elements instead of 176 / 210), Q8_0 adds a row sum.
  k.weight_bytes = double(kernels->panel_block_bytes(1)) / double(kernels->block_elems);
  // The JIT AVX-512 path needs VNNI; without it the 8-lane AVX2 / AVX-VNNI kernels run.
  k.vector_regs = avx512 ? 32 : 16;
  k.lanes = jit::panel_cols(k.jit_isa);
  k.kernel_efficiency = kJitKernelEfficiency;
}
}  // namespace

CacheSizes cache_sizes(const topo::Machine& m) {
  CacheSizes c;
  c.l1 = m.cache_bytes(1);
  c.l2 = m.cache_bytes(2);
  c.l3 = m.cache_bytes(3);
  // Stated fallbacks, used only when the topology reports nothing for a level.
  if (!c.l1) c.l1 = 32u << 10, c.notes.push_back("L1d size unknown: assuming 32K");
  if (!c.l2) c.l2 = 256u << 10, c.notes.push_back("L2 size unknown: assuming 256K");
  if (!c.l3) c.l3 = c.l2, c.notes.push_back("no L3 reported: treating L2 as the last level");
  int smt = 1;
  if (!m.cores.empty()) smt = std::max<int>(1, int(m.cores.front().cpus.size()));
  int sharers = m.cache_sharers(3);
  c.l3_cores = sharers > 0 ? std::max(1, sharers / smt) : std::max<int>(1, int(m.cores.size()));
  c.physical_cores = std::max<int>(1, int(m.cores.size()));
  return c;
}

KernelTraits kernel_traits(const topo::Isa& isa, TensorType wtype) {
  KernelTraits k;
  const auto& info = tensor_type_info(wtype);
  k.vector_regs = isa.avx512f ? 32 : 16;
  k.lanes = isa.avx512f ? 16 : 8;
  k.isa_name = isa.amx_usable ? "amx" : isa.avx512vnni ? "avx512-vnni" : isa.avx512f ? "avx512" : isa.avx_vnni ? "avx-vnni"
               : isa.avx2 ? "avx2" : "sse";
  k.weight_bytes = double(info.block_bytes) / double(info.block_elems);
  switch (wtype) {
    case TensorType::F32:
      k.path = ComputePath::f32_fma, k.act_bytes = 4, k.reserved_regs = 1, k.unpack_ops = 0;
      break;
    case TensorType::F16:
      k.path = ComputePath::f32_fma, k.act_bytes = 4, k.reserved_regs = 1, k.unpack_ops = 1;
      break;
    case TensorType::BF16:
      if (isa.avx512bf16) k.path = ComputePath::bf16_dot, k.act_bytes = 2, k.unpack_ops = 0;
      else k.path = ComputePath::f32_fma, k.act_bytes = 4, k.unpack_ops = 1;
      k.reserved_regs = 1;
      break;
    default: {
      // Quantized weights: activations are quantized to 8 bits (Q8_K rows for K-quants, Q8_0 for
      // the 32-element formats) and the kernel unpacks weights to int8 for u8 x s8 dot products.
      k.path = ComputePath::int8_dot;
      bool kquant = info.block_elems == 256;
      k.act_bytes = kquant ? 292.0 / 256.0 : 34.0 / 32.0;
      double bits = 8.0 * k.weight_bytes;
      k.reserved_regs = bits < 8 ? 3 : 2;  // nibble mask + unpack temp + scales; int8: temp + scales
      // 8-bit: none; 4-bit: mask + shift; 5/6-bit: also merge the high bits; 2/3-bit: several
      // shifts and masks. Per-block scales are applied once per block, outside the k loop.
      k.unpack_ops = bits >= 8 ? 0 : bits < 4 ? 4 : bits < 5 ? 2 : 3;
      set_jit_traits(isa, wtype, k);
      break;
    }
  }
  return k;
}

Footprint footprint(const OpShape& s, const Tiling& t, const KernelTraits& k, int threads_per_l3) {
  const double nw = s.weight_matrices();
  const double wb = k.weight_bytes * nw, ab = k.act_bytes;
  Footprint f;
  if (k.jit) {
    // The JIT kernel walks one quant block of each stream and row at a time (L1) and, inside an
    // mc x nc tile, keeps the tile's activation rows and one column group's panels (L2) while
    // the column groups stream past; sums stay in registers, so there is no partial-sum tile.
    const double grain = tensor_type_info(s.wtype).block_elems;
    f.l1 = grain * (t.nr * wb + t.mr * ab);
    f.l2 = double(s.k) * (t.nr * wb + double(t.mc) * ab);
  } else {
    f.l1 = double(t.kc) * (t.nr * wb + t.mr * ab);
    f.l2 = double(t.kc) * (double(t.nc) * wb + double(t.mc) * ab) + double(t.mc) * double(t.nc) * 4.0;
  }
  if (t.order == LoopOrder::n_k_m)
    f.l3 = double(s.m) * double(s.k) * ab;  // every row of x, reused by each weight block
  else
    f.l3 = double(threads_per_l3) * double(t.mc) * double(s.k) * ab;  // each thread's rows
  return f;
}

Cost estimate(const OpShape& s, const Tiling& t, const KernelTraits& k, const CacheSizes& c, const PeakRates& p) {
  Cost r;
  const int T = std::max(1, t.threads);
  // SMT workers share a core's execution units: no extra peak is assumed (tuning measures it).
  const int cores = t.smt ? std::max(1, std::min(T, c.physical_cores)) : T;
  const int t_per_l3 = std::min(T, c.l3_cores);
  const double nw = s.weight_matrices();
  const double M = double(s.m), N = double(s.n), K = double(s.k);
  const double W = N * K * k.weight_bytes * nw, A = M * K * k.act_bytes, C = M * N * 4.0;
  const double Mb = ceil_div(M, double(t.mc)), Nb = ceil_div(N, double(t.nc)), Kb = ceil_div(K, double(t.kc));
  r.macs = s.macs();
  r.fp = footprint(s, t, k, t_per_l3);
  // N>K>M revisits the nc-wide weight block once per row block: from L2 when it fits there
  // beside the activation rows (for the JIT kernels the footprint above leaves it out).
  const bool l2_holds_block =
      k.jit ? double(t.nc) * K * k.weight_bytes * nw + double(t.mc) * K * k.act_bytes <= double(c.l2)
            : r.fp.l2 <= double(c.l2);
  const bool l3_holds = r.fp.l3 <= double(c.l3) / 2;  // half: the rest streams weights through

  // Registers: per k step, nr/lanes weight vectors (each unpacked with unpack_ops) and mr
  // broadcasts feed mr*nr/lanes dot products. Loads and vector ops each issue on as many ports
  // as the dot products have (2 on current x86 cores), so the dots keep
  // dots / max(loads, dots + unpack ops) of the vector throughput.
  // The JIT kernels load every matrix's panel (SwiGLU: gate and up streams) per k step.
  const double nr_vec = double(t.nr) / k.lanes * (k.jit ? nw : 1.0);
  const double dots = t.mr * nr_vec;
  r.eff_register = dots / std::max(t.mr + nr_vec, dots + nr_vec * k.unpack_ops) * k.kernel_efficiency;
  r.eff_tail = (M / (ceil_div(M, t.mr) * t.mr)) * (N / (ceil_div(N, t.nr) * t.nr));
  // Tasks are handed out dynamically; a short last task (N not a multiple of nc) counts as its
  // share, so 12288 columns in two nc = 8192 tasks keep 1.5 / 2 = 75% of two threads busy.
  const double tasks = t.split == SplitAxis::n ? Nb : Mb;
  const double work = t.split == SplitAxis::n ? N / double(t.nc) : M / double(t.mc);
  r.eff_balance = work / (ceil_div(tasks, T) * T);

  // Bytes served by each level.
  r.bytes_l1 = r.macs * (k.act_bytes / t.nr + k.weight_bytes / t.mr);
  double dram = C, dram_w = 0, l3 = 0, l2 = 0;
  l2 += C * 2.0 * (Kb - 1);  // partial sums revisited per kc block
  // Activation micro-panels, once per weight micro-panel: from L2, or from L3 when the JIT
  // kernel's activation block does not fit L2 beside the column group.
  (k.jit && r.fp.l2 > double(c.l2) ? l3 : l2) += A * N / t.nr;
  if (t.order == LoopOrder::n_k_m) {
    // Weights stream from DRAM once; each block is revisited per row block from L2 (or beyond).
    dram_w += W;
    double rereads = W * (Mb - 1);
    (l2_holds_block ? l2 : l3) += rereads;
    // All rows of x pass each weight column block.
    if (l3_holds) dram += A, l3 += A * (Nb - 1);
    else dram += A * Nb;
  } else {
    // Rows outer: the whole weight matrix streams once per row block.
    dram += A;
    double per_thread_w = t.split == SplitAxis::n ? W / T : W;
    bool w_in_l3 = per_thread_w * t_per_l3 <= double(c.l3) / 2;
    if (w_in_l3) dram_w += W, l3 += W * (Mb - 1);
    else dram_w += W * Mb;
  }
  if (t.split == SplitAxis::m && T > 1) l3 += W * (T - 1);  // each thread reads every weight

  r.bytes_dram = dram + dram_w, r.bytes_l3 = l3, r.bytes_l2 = l2;
  const double bal = r.eff_balance;
  const double peak = p.gmacs_per_core(k.path);  // GMAC/s = 1e3 MAC/us
  r.compute_us = peak > 0 ? r.macs / (cores * peak * 1e3 * r.eff_register * r.eff_tail * bal) : 1e30;
  const double dram_bw = std::min(p.dram_gbps, cores * p.dram_gbps_per_core);  // GB/s = 1e3 B/us
  // Weights read as several interleaved streams per core (one per panel of the register block)
  // arrive slower than one sequential stream: the prefetcher tracks them less well. Measured
  // on zen4 with DRAM-bound decode GEMVs: 2 streams 0.72x, 3 0.65x, 4 0.62x of one stream's rate,
  // i.e. time x (1 + p (1 - 1/streams)) with p = dram_stream_penalty = 0.8.
  const double streams = double(t.nr) / k.lanes * (k.jit ? nw : 1.0);
  const double stream_factor = 1 + p.dram_stream_penalty * (1 - 1 / std::max(1.0, streams));
  r.dram_us = (dram + dram_w * stream_factor) / (dram_bw * 1e3);
  r.l3_us = r.bytes_l3 / (cores * p.l3_gbps_per_core * 1e3 * bal);
  r.l2_us = r.bytes_l2 / (cores * p.l2_gbps_per_core * 1e3 * bal);
  r.l1_us = r.bytes_l1 / (cores * p.l1_gbps_per_core * 1e3 * bal);
  // Fork/join of the pool, plus each worker's share of per-task costs (tasks are dealt out
  // dynamically, so a worker takes ceil(tasks / T) of them).
  r.sync_us = (T > 1 ? p.sync_us * T : 0) + ceil_div(tasks, T) * p.task_us;
  std::pair<double, const char*> parts[] = {{r.compute_us, "compute"}, {r.dram_us, "DRAM"}, {r.l3_us, "L3"},
                                            {r.l2_us, "L2"}, {r.l1_us, "L1"}};
  auto worst = *std::max_element(std::begin(parts), std::end(parts),
                                 [](auto& a, auto& b) { return a.first < b.first; });
  // Levels overlap, but not perfectly: the dominant term plus a tenth of the others.
  double others = 0;
  for (auto& [us, name] : parts) others += us;
  others -= worst.first;
  r.total_us = worst.first + 0.1 * others + r.sync_us;
  r.bound = r.sync_us > worst.first ? "sync" : worst.second;
  return r;
}

}  // namespace ckjit::planner
