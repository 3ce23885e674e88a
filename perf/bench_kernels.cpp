// Kernel benchmark (not a test): measures this machine's vpdpbusd peak and DRAM read bandwidth,
// then times the JIT Q4_K kernels (Gate-Up SwiGLU at the Qwen3-VL 8B and 2B page-OCR prefill
// shapes, decode GEMV at the 2B shapes) next to the same operation through llama.cpp's ggml.
//   bench_kernels [--threads 1,2] [--runs 5] [--only prefill|prefill-8b|prefill-2b|decode] [--mb 128] [--ggml-dir DIR]
//                 [--prefill-blocks mr=6,nr=2] [--decode-blocks mr=1,nr=4]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "perf/bench_ggml.h"
#include "perf/bench_machine_peak.h"
#include "perf/bench_team.h"
#include "runtime/quants/quants.h"

using namespace ckjit;
using namespace ckjit::jit;
using namespace ckjit::bench;

namespace {

struct Options {
  std::vector<int> threads{1, 2};
  int runs = 5;
  int mb = 128;  // activation rows per kernel call (L2 block)
  std::string prefill_blocks = "mr=6,nr=2";  // register block of the prefill SwiGLU kernel
  std::string decode_blocks = "mr=1,nr=4,pf=0";
  std::string only;
  bool ggml = true;
  std::string ggml_dir = std::string(CKJIT_SOURCE_DIR) + "/.deps/npm/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64";
};

std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, name = "unknown CPU", fam, model;
  while (std::getline(f, line)) {
    auto v = line.substr(line.find(':') == std::string::npos ? line.size() : line.find(':') + 1);
    if (!v.empty() && v[0] == ' ') v.erase(0, 1);
    if (line.rfind("model name", 0) == 0 && name == "unknown CPU") name = v;
    if (line.rfind("cpu family", 0) == 0 && fam.empty()) fam = v;
    if (line.rfind("model\t", 0) == 0 && model.empty()) model = v;
  }
  return name + " (family " + fam + " model " + model + ", " + std::to_string(std::thread::hardware_concurrency()) + " CPUs)";
}

std::vector<quant::BlockQ4_K> random_q4k(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<quant::BlockQ4_K> v(size_t(n * k / 256));
  for (auto& b : v) {
    uint64_t r = rng();
    b.d = quant::f32_to_f16(0.001f + float(r & 1023) * 1e-5f);
    b.dmin = quant::f32_to_f16(0.001f + float((r >> 10) & 1023) * 1e-5f);
    for (int i = 0; i < 12; i += 4) { uint32_t w = uint32_t(rng()); std::memcpy(b.scales + i, &w, 4); }
    for (int i = 0; i < 128; i += 8) { uint64_t w = rng(); std::memcpy(b.qs + i, &w, 8); }
  }
  return v;
}

std::vector<float> random_floats(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& f : v) f = nd(rng);
  return v;
}

// Splits `panels` column panels over the team in groups of `group` panels.
std::pair<int64_t, int64_t> panel_range(int64_t panels, int group, int t, int nt) {
  int64_t groups = (panels + group - 1) / group;
  int64_t g0 = groups * t / nt, g1 = groups * (t + 1) / nt;
  return {std::min(panels, g0 * group), std::min(panels, g1 * group)};
}

void run_split(Team& team, const JitKernel& k, const MatmulOperands& op, int64_t m, int64_t n, int mb) {
  const int panel = op.w->panel;
  const int group = k.spec().op == Op::SwiGLU ? k.spec().nr / 2 : k.spec().nr;
  const int64_t panels = (n + panel - 1) / panel;
  team.run([&](int t) {
    auto [p0, p1] = panel_range(panels, group, t, team.size());
    if (p0 >= p1) return;
    for (int64_t m0 = 0; m0 < m; m0 += mb)
      run_tile(k, op, {m0, std::min(m, m0 + mb), p0 * panel, std::min(n, p1 * panel)});
  });
}

struct Shape { const char* name; int64_t m, n, k; };

void bench_gate_up(const Options& o, const Shape& s, Ggml* gg, const std::vector<double>& peak_by_threads) {
  std::printf("\n== Gate-Up SwiGLU %s: M=%lld N=%lld (x2) K=%lld, %.1f G MAC ==\n", s.name, (long long)s.m,
              (long long)s.n, (long long)s.k, double(s.m) * 2 * s.n * s.k / 1e9);
  auto gq = random_q4k(s.n, s.k, 1), uq = random_q4k(s.n, s.k, 2);
  double t0 = now_s();
  PackedWeights gw = repack_q4_K(gq.data(), s.n, s.k, 16, 2);
  PackedWeights uw = repack_q4_K(uq.data(), s.n, s.k, 16, 2);
  std::printf("repack gate+up (%.1f MB, 2 threads): %.1f ms\n", double(gw.bytes() + uw.bytes()) / 1e6,
              (now_s() - t0) * 1e3);
  auto xf = random_floats(size_t(s.m * s.k), 3);
  const int64_t nbk = s.k / 256;
  std::vector<quant::BlockQ8_K> xq(size_t(s.m * nbk));
  t0 = now_s();
  for (int64_t r = 0; r < s.m; ++r) quant::quantize_row_q8_K(xf.data() + r * s.k, xq.data() + r * nbk, s.k);
  const double quant_scalar_ms = (now_s() - t0) * 1e3;
  const JitKernel& qk = global_code_cache().get(KernelSpec::parse("op=quantize,w=f32,a=q8_K,isa=avx512,k=" + std::to_string(s.k)));
  auto quantize = [&](Team& team) {
    team.run([&](int t) {
      QuantizeArgs a;
      int64_t r0 = s.m * t / team.size(), r1 = s.m * (t + 1) / team.size();
      a.x = xf.data() + r0 * s.k;
      a.y = xq.data() + r0 * nbk;
      a.rows = r1 - r0;
      a.ldx = s.k * 4;
      a.ldy = nbk * int64_t(sizeof(quant::BlockQ8_K));
      qk.as<QuantizeFn>()(&a);
    });
  };
  std::vector<float> y(size_t(s.m * s.n));
  MatmulOperands op;
  op.w = &gw;
  op.w2 = &uw;
  op.x = xq.data();
  op.ldx = nbk * int64_t(sizeof(quant::BlockQ8_K));
  op.y = y.data();
  op.ldy = s.n * 4;
  KernelSpec spec = KernelSpec::parse("op=swiglu,w=q4_K,a=q8_K,isa=avx512,ep=swiglu," + o.prefill_blocks + ",k=" + std::to_string(s.k));
  const JitKernel& k = global_code_cache().get(spec);
  std::printf("kernel %s (%zu bytes); activation quantization: scalar 1 thread %.1f ms\n",
              spec.to_string().c_str(), k.size(), quant_scalar_ms);
  const double macs = double(s.m) * 2 * s.n * s.k;

  // ggml: g = W_g x, u = W_u x, y = silu(g) * u, from the same Q4_K blocks and f32 activations.
  void* gctx = nullptr;
  void* graph = nullptr;
  void* gout = nullptr;
  if (gg) {
    size_t mem = size_t(gq.size() * 2 * sizeof(quant::BlockQ4_K)) + size_t(s.m * s.k * 4) +
                 size_t(s.m * s.n * 4) * 3 + (64u << 20);
    gctx = gg->init({mem, nullptr, false});
    void* wg = gg->new_tensor_2d(gctx, kGgmlQ4_K, s.k, s.n);
    void* wu = gg->new_tensor_2d(gctx, kGgmlQ4_K, s.k, s.n);
    void* x = gg->new_tensor_2d(gctx, kGgmlF32, s.k, s.m);
    std::memcpy(gg->get_data(wg), gq.data(), gg->nbytes(wg));
    std::memcpy(gg->get_data(wu), uq.data(), gg->nbytes(wu));
    std::memcpy(gg->get_data(x), xf.data(), gg->nbytes(x));
    gout = gg->swiglu_split(gctx, gg->mul_mat(gctx, wg, x), gg->mul_mat(gctx, wu, x));
    graph = gg->new_graph(gctx);
    gg->build_forward_expand(graph, gout);
  }
  for (int nt : o.threads) {
    Team team(nt);
    std::vector<double> qruns;
    for (int r = 0; r < o.runs; ++r) {
      double a = now_s();
      quantize(team);
      qruns.push_back(now_s() - a);
    }
    const double quant_ms = median(qruns) * 1e3;
    run_split(team, k, op, s.m, s.n, o.mb);  // warm-up
    std::vector<double> runs;
    for (int r = 0; r < o.runs; ++r) {
      double a = now_s();
      run_split(team, k, op, s.m, s.n, o.mb);
      runs.push_back(now_s() - a);
    }
    double t = median(runs), tmin = *std::min_element(runs.begin(), runs.end());
    double peak = peak_by_threads[size_t(nt)];
    std::printf("ckjit  %d thread%s: %8.1f ms  %7.1f GMAC/s  %5.1f%% of vpdpbusd peak (best run %.1f ms, %.1f%%)", nt,
                nt > 1 ? "s" : " ", t * 1e3, macs / t / 1e9, 100.0 * macs / t / 1e9 / peak, tmin * 1e3,
                100.0 * macs / tmin / 1e9 / peak);
    std::printf("  (+ JIT quantize %.2f ms = %.1f ms)\n", quant_ms, t * 1e3 + quant_ms);
    if (gg) {
      gg->compute(gctx, graph, nt);  // warm-up (also allocates the work buffer)
      std::vector<double> gruns;
      for (int r = 0; r < o.runs; ++r) {
        double a = now_s();
        gg->compute(gctx, graph, nt);
        gruns.push_back(now_s() - a);
      }
      double gt = median(gruns);
      const float* gy = static_cast<const float*>(gg->get_data(gout));
      double maxdiff = 0, maxabs = 0;  // normwise: max |ckjit - ggml| / max |ggml|
      for (size_t i = 0; i < y.size(); ++i) {
        maxdiff = std::max(maxdiff, double(std::fabs(gy[i] - y[i])));
        maxabs = std::max(maxabs, double(std::fabs(gy[i])));
      }
      double maxrel = maxdiff / maxabs;
      std::printf("ggml   %d thread%s: %8.1f ms  %7.1f GMAC/s  -> ckjit is %.2fx ggml (incl. quantize %.2fx); max diff / max |y| %.1e\n",
                  nt, nt > 1 ? "s" : " ", gt * 1e3, macs / gt / 1e9, gt / t, gt / (t + quant_ms / 1e3), maxrel);
    }
  }
  if (gg) gg->free(gctx);
}

void bench_decode(const Options& o, Ggml* gg, double dram_gbs_by_threads[3]) {
  const int64_t n = 6144, k = 2048, layers = 28;
  std::printf("\n== Decode GEMV 2B: M=1 N=%lld K=%lld, %lld distinct weight copies (from DRAM) ==\n",
              (long long)n, (long long)k, (long long)layers);
  std::vector<std::vector<quant::BlockQ4_K>> raw;
  std::vector<PackedWeights> w, w2;
  for (int64_t l = 0; l < layers; ++l) {
    raw.push_back(random_q4k(n, k, uint32_t(100 + l)));
    w.push_back(repack_q4_K(raw.back().data(), n, k, 16, 2));
    auto up = random_q4k(n, k, uint32_t(200 + l));
    w2.push_back(repack_q4_K(up.data(), n, k, 16, 2));
  }
  auto xf = random_floats(size_t(k), 7);
  std::vector<quant::BlockQ8_K> xq(size_t(k / 256));
  quant::quantize_row_q8_K(xf.data(), xq.data(), k);
  std::vector<float> y(static_cast<size_t>(n));
  KernelSpec gemv = KernelSpec::parse("op=gemv,w=q4_K,a=q8_K,isa=avx512," + o.decode_blocks + ",k=" + std::to_string(k));
  KernelSpec sw = KernelSpec::parse("op=swiglu,w=q4_K,a=q8_K,isa=avx512,ep=swiglu," + o.decode_blocks + ",k=" + std::to_string(k));
  const JitKernel& kg = global_code_cache().get(gemv);
  const JitKernel& ks = global_code_cache().get(sw);
  const double bytes = double(w[0].bytes());
  for (int nt : o.threads) {
    Team team(nt);
    double bw = dram_gbs_by_threads[nt];
    for (int fused = 0; fused < 2; ++fused) {
      std::vector<double> runs;
      for (int r = 0; r <= o.runs; ++r) {
        double a = now_s();
        for (int64_t l = 0; l < layers; ++l) {
          MatmulOperands op;
          op.w = &w[size_t(l)];
          op.w2 = fused ? &w2[size_t(l)] : nullptr;
          op.x = xq.data();
          op.ldx = 0;
          op.y = y.data();
          op.ldy = 0;
          run_split(team, fused ? ks : kg, op, 1, n, 1);
        }
        if (r > 0) runs.push_back((now_s() - a) / layers);  // first pass is warm-up
      }
      double t = median(runs), b = bytes * (fused ? 2 : 1);
      std::printf("ckjit  %-12s %d thread%s: %7.1f us/matrix  %6.1f GB/s  %5.1f%% of DRAM read bandwidth (%.1f MB read)\n",
                  fused ? "gate+up fused" : "gemv", nt, nt > 1 ? "s" : " ", t * 1e6, b / t / 1e9,
                  100.0 * b / t / 1e9 / bw, b / 1e6);
    }
    if (gg) {
      size_t mem = size_t(layers) * (raw[0].size() * sizeof(quant::BlockQ4_K) + size_t(n) * 4) + (64u << 20);
      void* ctx = gg->init({mem, nullptr, false});
      void* x = gg->new_tensor_2d(ctx, kGgmlF32, k, 1);
      std::memcpy(gg->get_data(x), xf.data(), size_t(k) * 4);
      void* graph = gg->new_graph(ctx);
      for (int64_t l = 0; l < layers; ++l) {
        void* wt = gg->new_tensor_2d(ctx, kGgmlQ4_K, k, n);
        std::memcpy(gg->get_data(wt), raw[size_t(l)].data(), gg->nbytes(wt));
        gg->build_forward_expand(graph, gg->mul_mat(ctx, wt, x));
      }
      gg->compute(ctx, graph, nt);
      std::vector<double> runs;
      for (int r = 0; r < o.runs; ++r) {
        double a = now_s();
        gg->compute(ctx, graph, nt);
        runs.push_back((now_s() - a) / layers);
      }
      double gt = median(runs), gb = double(raw[0].size() * sizeof(quant::BlockQ4_K));
      std::printf("ggml   %-12s %d thread%s: %7.1f us/matrix  %6.1f GB/s  %5.1f%% of DRAM read bandwidth\n", "gemv", nt,
                  nt > 1 ? "s" : " ", gt * 1e6, gb / gt / 1e9, 100.0 * gb / gt / 1e9 / bw);
      gg->free(ctx);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) { std::fprintf(stderr, "%s needs a value\n", a.c_str()); std::exit(2); }
      return argv[++i];
    };
    if (a == "--threads") {
      o.threads.clear();
      std::string v = next();
      for (size_t p = 0; p < v.size();) {
        size_t c = v.find(',', p);
        o.threads.push_back(std::max(1, std::min(2, std::stoi(v.substr(p, c - p)))));
        p = c == std::string::npos ? v.size() : c + 1;
      }
    } else if (a == "--runs") o.runs = std::max(1, std::stoi(next()));
    else if (a == "--mb") o.mb = std::max(1, std::stoi(next()));
    else if (a == "--only") o.only = next();
    else if (a == "--no-ggml") o.ggml = false;
    else if (a == "--prefill-blocks") o.prefill_blocks = next();
    else if (a == "--decode-blocks") o.decode_blocks = next();
    else if (a == "--ggml-dir") o.ggml_dir = next();
    else { std::fprintf(stderr, "usage: bench_kernels [--threads 1,2] [--runs N] [--mb ROWS] [--only prefill|prefill-8b|prefill-2b|decode] [--no-ggml] [--prefill-blocks mr=6,nr=2] [--decode-blocks mr=1,nr=4] [--ggml-dir DIR]\n"); return 2; }
  }
  if (!isa_runs(IsaPath::Avx512, runtime_isa())) {
    std::printf("this benchmark times the AVX-512 VNNI kernels; this CPU (or CKJIT_MAX_ISA) does not allow them\n");
    return 0;
  }
  std::printf("machine: %s\nisa: %s\n", cpu_name().c_str(), runtime_isa().to_string().c_str());
  std::printf("load average at start: %s", [] {
    std::ifstream f("/proc/loadavg");
    std::string l;
    std::getline(f, l);
    return l + "\n";
  }().c_str());
  std::printf("times: median of %d runs after a warm-up; peaks and bandwidth: best of 5 runs\n", o.runs);
  std::vector<double> peak(3, 0.0);
  double dram[3] = {0, 0, 0};
  for (int nt : o.threads) {
    Team team(nt);
    PeakResult p = vnni_peak(team);
    peak[size_t(nt)] = p.gmacs;
    dram[nt] = dram_read_gbs(team, size_t(1) << 30);
    std::printf("measured %d thread%s: vpdpbusd zmm peak %.1f GMAC/s (best with %d accumulators), DRAM read %.1f GB/s\n",
                nt, nt > 1 ? "s" : " ", p.gmacs, p.accs, dram[nt]);
  }
  Ggml ggml(o.ggml ? o.ggml_dir : std::string("(disabled)"), {"zen4", "icelake", "skylakex", "haswell", "x64"});
  Ggml* gg = ggml.ok() ? &ggml : nullptr;
  std::printf("ggml: %s\n", gg ? ("libggml-cpu-" + ggml.variant() + ".so from " + o.ggml_dir).c_str()
                                : ("not available (" + ggml.error() + ")").c_str());
  if (o.only.empty() || o.only == "prefill" || o.only == "prefill-8b") bench_gate_up(o, {"8B", 1028, 12288, 4096}, gg, peak);
  if (o.only.empty() || o.only == "prefill" || o.only == "prefill-2b") bench_gate_up(o, {"2B", 1038, 6144, 2048}, gg, peak);
  if (o.only.empty() || o.only == "decode") bench_decode(o, gg, dram);
  return 0;
}
