// In-cache single-thread speed of the Q4_K x Q8_K SwiGLU kernel (not a test): a small problem
// (M=48 rows, 2x64 columns, K=2048; ~260 KB, stays in L2) timed many times; prints min and median
// GMAC/s and the percentage of this machine's measured vpdpbusd (zmm) peak.
//   bench_q4k_incache [--reps N] [--isa avx512|avxvnni|avx2] [--blocks mr=6,nr=2]
// --isa avxvnni runs the VEX form where the CPU has AVX-VNNI, else the EVEX form (same code
// otherwise); the ymm paths default to mr=2,nr=2, the largest SwiGLU block of their 16 registers.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "perf/bench_machine_peak.h"
#include "perf/bench_team.h"
#include "runtime/quants/quants.h"

using namespace ckjit;
using namespace ckjit::jit;
using namespace ckjit::bench;

int main(int argc, char** argv) try {
  int reps = 201;
  std::string blocks, isa = "avx512";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--reps") reps = std::max(1, std::stoi(argv[i + 1]));
    else if (a == "--blocks") blocks = argv[i + 1];
    else if (a == "--isa") isa = argv[i + 1];
  }
  std::string spec_text = "op=swiglu,w=q4_K,a=q8_K,ep=swiglu,isa=" + isa;
  if (isa == "avxvnni")
    spec_text += isa_runs(IsaPath::AvxVnni, runtime_isa(), VnniEncoding::Vex) ? ",enc=vex" : ",enc=evex";
  if (blocks.empty()) blocks = isa == "avx512" ? "mr=6,nr=2" : "mr=2,nr=2";
  pin_to_cpu(0);
  const int64_t m = 48, n = 64, k = 2048, nbk = k / 256;
  std::mt19937_64 rng(7);
  auto blocks_q4k = [&]() {
    std::vector<quant::BlockQ4_K> v(size_t(n * nbk));
    for (auto& b : v) {
      uint64_t r = rng();
      b.d = quant::f32_to_f16(0.001f + float(r & 1023) * 1e-5f);
      b.dmin = quant::f32_to_f16(0.001f + float((r >> 10) & 1023) * 1e-5f);
      for (int i = 0; i < 12; i += 4) { uint32_t w = uint32_t(rng()); std::memcpy(b.scales + i, &w, 4); }
      for (int i = 0; i < 128; i += 8) { uint64_t w = rng(); std::memcpy(b.qs + i, &w, 8); }
    }
    return v;
  };
  auto gq = blocks_q4k(), uq = blocks_q4k();
  const KernelSpec spec = KernelSpec::parse(spec_text + "," + blocks + ",k=" + std::to_string(k));
  const int panel = panel_cols(spec.isa);
  PackedWeights gw = repack_q4_K(gq.data(), n, k, panel, 1), uw = repack_q4_K(uq.data(), n, k, panel, 1);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> xf(size_t(m * k));
  for (auto& f : xf) f = nd(rng);
  std::vector<quant::BlockQ8_K> xq(size_t(m * nbk));
  for (int64_t r = 0; r < m; ++r) quant::quantize_row_q8_K(xf.data() + r * k, xq.data() + r * nbk, k);
  std::vector<float> y(size_t(m * n));
  MatmulOperands op;
  op.w = &gw;
  op.w2 = &uw;
  op.x = xq.data();
  op.ldx = nbk * int64_t(sizeof(quant::BlockQ8_K));
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
  const double peak = vnni_peak(team).gmacs;
  std::printf("%s in cache, 1 thread: best %.1f GMAC/s, median %.1f GMAC/s; vpdpbusd zmm peak %.1f -> %.1f%% (best), %.1f%% (median)\n",
              kern.spec().to_string().c_str(), g.back(), g[g.size() / 2], peak, 100 * g.back() / peak,
              100 * g[g.size() / 2] / peak);
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_q4k_incache: %s\n", e.what());
  return 1;
}
