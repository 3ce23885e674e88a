// In-cache single-thread speed of the Q4_K x Q8_K SwiGLU kernel (not a test): a small problem
// (M=48 rows, 2x64 columns, K=2048; ~260 KB, stays in L2) timed many times; prints min and median
// GMAC/s and the percentage of this machine's measured peak of the path's int8 dot mix.
//   bench_q4k_incache [--reps N] [--isa avx512|avxvnni|avx2] [--blocks mr=6,nr=2] [--w q4_K|q6_K|q8_0]
// Default --isa: the best of avx512 / avxvnni / avx2 this CPU (and CKJIT_MAX_ISA) allows.
// --isa avxvnni runs the VEX form where the CPU has AVX-VNNI, else the EVEX form (same code
// otherwise; its peak is then the vpdpbusd zmm one: the ymm probe is VEX-only). Default blocks:
// the largest fast SwiGLU block of each path's registers (avx512 mr=6,nr=2; avxvnni mr=4,nr=2;
// avx2 mr=2,nr=2). --w q6_K / q8_0 time those kernels instead.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "perf/bench_data.h"
#include "perf/bench_machine_peak.h"
#include "perf/bench_team.h"
#include "runtime/quants/quants.h"

using namespace ckjit;
using namespace ckjit::jit;
using namespace ckjit::bench;

int main(int argc, char** argv) try {
  int reps = 201;
  std::string blocks, isa, wname = "q4_K";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--reps") reps = std::max(1, std::stoi(argv[i + 1]));
    else if (a == "--blocks") blocks = argv[i + 1];
    else if (a == "--isa") isa = argv[i + 1];
    else if (a == "--w") wname = argv[i + 1];
  }
  const topo::Isa cpu = runtime_isa();
  if (isa.empty())
    for (IsaPath p : {IsaPath::Avx512, IsaPath::AvxVnni, IsaPath::Avx2})
      if (isa.empty() && isa_runs(p, cpu)) isa = isa_name(p);
  const bool q80 = wname == "q8_0";
  std::string spec_text = "op=swiglu,w=" + wname + ",a=" + (q80 ? "q8_0" : "q8_K") + ",ep=swiglu,isa=" + isa;
  if (isa == "avxvnni")
    spec_text += isa_runs(IsaPath::AvxVnni, cpu, VnniEncoding::Vex) ? ",enc=vex" : ",enc=evex";
  if (blocks.empty()) blocks = isa == "avx512" ? "mr=6,nr=2" : isa == "avxvnni" ? "mr=4,nr=2" : "mr=2,nr=2";
  pin_to_cpu(0);
  const int64_t m = 48, n = 64, k = 2048, nbk = k / 256;
  std::mt19937_64 rng(7);
  auto blocks_q4k = [&]() { return random_q4k_blocks(size_t(n * nbk), rng); };
  // Q6_K / Q8_0: random bytes with a sane f16 scale.
  auto random_blocks = [&]<class B>(B*, int64_t count) {
    std::vector<B> v(static_cast<size_t>(count));
    for (auto& b : v) {
      for (size_t i = 0; i < sizeof(B); ++i) reinterpret_cast<uint8_t*>(&b)[i] = uint8_t(rng());
      b.d = quant::f32_to_f16(0.001f + float(rng() & 1023) * 1e-5f);
    }
    return v;
  };
  const KernelSpec spec = KernelSpec::parse(spec_text + "," + blocks + ",k=" + std::to_string(k));
  const int panel = panel_cols(spec.isa);
  auto pack = [&]() {
    if (wname == "q6_K") return repack_q6_K(random_blocks((quant::BlockQ6_K*)nullptr, n * nbk).data(), n, k, panel, 1);
    if (q80) return repack_q8_0(random_blocks((quant::BlockQ8_0*)nullptr, n * k / 32).data(), n, k, panel, 1);
    return repack_q4_K(blocks_q4k().data(), n, k, panel, 1);
  };
  PackedWeights gw = pack(), uw = pack();
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> xf(size_t(m * k));
  for (auto& f : xf) f = nd(rng);
  std::vector<quant::BlockQ8_K> xq(size_t(m * nbk));
  std::vector<quant::BlockQ8_0> x0(size_t(m * k / 32));
  for (int64_t r = 0; r < m; ++r) {
    if (q80) quant::quantize_row_q8_0_x86(xf.data() + r * k, x0.data() + r * (k / 32), k);
    else quant::quantize_row_q8_K(xf.data() + r * k, xq.data() + r * nbk, k);
  }
  std::vector<float> y(size_t(m * n));
  MatmulOperands op;
  op.w = &gw;
  op.w2 = &uw;
  op.x = q80 ? static_cast<const void*>(x0.data()) : xq.data();
  op.ldx = q80 ? k / 32 * int64_t(sizeof(quant::BlockQ8_0)) : nbk * int64_t(sizeof(quant::BlockQ8_K));
  op.y = y.data();
  op.ldy = n * 4;
  const JitKernel& kern = global_code_cache().get(spec);
  const int inner = 20;  // ~2 ms per rep: the best rep is one the other tenants left alone
  const double macs = double(m) * 2 * n * k * inner;
  std::vector<double> g;
  for (int r = 0; r < reps + 1; ++r) {
    double t0 = now_s();
    for (int i = 0; i < inner; ++i) run_tile(kern, op, {0, m, 0, n});
    if (r > 0) g.push_back(macs / (now_s() - t0) / 1e9);  // first rep warms up
  }
  std::sort(g.begin(), g.end());
  Team team(1);
  const bool evex = spec.isa == IsaPath::AvxVnni && spec.enc == VnniEncoding::Evex;
  const PeakResult p = int8_peak(team, int8_probe(evex ? IsaPath::Avx512 : spec.isa));
  const double peak = p.gmacs;
  std::printf("%s in cache, 1 thread: best %.1f GMAC/s, median %.1f GMAC/s; %s peak %.1f -> %.1f%% (best), %.1f%% (median)\n",
              kern.spec().to_string().c_str(), g.back(), g[g.size() / 2], p.mix, peak, 100 * g.back() / peak,
              100 * g[g.size() / 2] / peak);
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_q4k_incache: %s\n", e.what());
  return 1;
}
