// Kernel benchmark (not a test): measures this machine's int8 dot-product peak (the instruction
// mix of the ISA path timed: vpdpbusd zmm, vpdpbusd ymm or vpmaddubsw+vpmaddwd) and DRAM read
// bandwidth, then times the JIT Q4_K kernels (Gate-Up SwiGLU at the Qwen3-VL 8B and 2B page-OCR
// prefill shapes, decode GEMV at the 2B shapes) next to the same operation through llama.cpp's
// ggml, twice: weights in a plain CPU buffer (ggml's generic mul_mat) and in the CPU_REPACK buffer
// (weights interleaved for ggml's Q4_K gemm/gemv kernels: what llama.cpp runs for real models).
// ggml runs only after the ckjit team has ended, with the caller's original CPU set, so its
// threads inherit neither the team's CPU-0 pinning nor a spinning worker next to them.
//   bench_kernels [--threads 1,2] [--runs 5] [--only prefill|prefill-8b|prefill-2b|decode] [--mb 128] [--ggml-dir DIR]
//                 [--isa amx|avx512|avxvnni|avx2 (default: the best of avx512 / avxvnni / avx2 allowed;
//                  amx: the prefill SwiGLU on AMX-INT8 16-row tiles, decode on AVX-512 as Linear runs it,
//                  percentages against the vpdpbusd zmm peak: there is no AMX peak probe)]
//                 [--prefill-blocks mr=6,nr=2 (default per path)] [--decode-blocks mr=1,nr=1 (default: the planner's)]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "jit/code_cache.h"
#include "jit/isa_select.h"
#include "jit/kernels.h"
#include "jit/planner/planner.h"
#include "perf/bench_data.h"
#include "perf/bench_ggml.h"
#include "perf/bench_ggml_graph.h"
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
  IsaPath isa = IsaPath::Avx512;  // the kernels' path (main picks it)
  std::string prefill_blocks;  // register block of the prefill SwiGLU kernel; empty: the path's default
  std::string decode_blocks;  // empty: the planner's register blocks for the decode shapes (what ckjit run uses)
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

std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string l;
  std::getline(f, l);
  return l;
}

std::vector<quant::BlockQ4_K> random_q4k(int64_t n, int64_t k, uint32_t seed) {
  std::mt19937_64 rng(seed);
  return random_q4k_blocks(size_t(n * k / 256), rng);
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

// ggml as compared against: one variant per weight buffer type (plain CPU, CPU_REPACK).
struct GgmlPeer {
  struct Variant { std::string label; void* weight_buft; };
  Ggml* gg = nullptr;
  std::vector<Variant> variants;
  cpu_set_t caller_cpus;  // the caller's CPU set at start; ggml's threads inherit it
};

// Median seconds of `runs` computes after a warm-up (which also sizes ggml's work buffer).
double time_ggml(const GgmlPeer& peer, GgmlGraph& graph, int threads, int runs, const char* label) {
  set_affinity(peer.caller_cpus);  // no team is alive here; make sure its CPU-0 pinning is gone too
  if (!graph.compute(threads)) { std::printf("%s: graph compute failed\n", label); return 0; }
  std::vector<double> t;
  for (int r = 0; r < runs; ++r) {
    double a = now_s();
    graph.compute(threads);
    t.push_back(now_s() - a);
  }
  return median(t);
}

// Normwise difference max |y - ref| / max |ref|.
double normwise_diff(const float* ref, const float* y, size_t n) {
  double maxdiff = 0, maxabs = 0;
  for (size_t i = 0; i < n; ++i) {
    maxdiff = std::max(maxdiff, double(std::fabs(ref[i] - y[i])));
    maxabs = std::max(maxabs, double(std::fabs(ref[i])));
  }
  return maxdiff / maxabs;
}

std::string cpu_list(const cpu_set_t& set) {
  std::string l;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) l += (l.empty() ? "" : ",") + std::to_string(c);
  return "{" + l + "}";
}

const char* plural(int nt) { return nt > 1 ? "s" : " "; }

struct GgmlCase {
  const GgmlPeer::Variant* variant;
  std::unique_ptr<GgmlGraph> graph;
  std::vector<void*> outputs;
};

// Allocates and uploads a case's tensors, printing the upload time (the repack, for CPU_REPACK).
bool upload_case(GgmlCase& c) {
  double a = now_s();
  if (!c.graph->upload()) {
    std::printf("%s: buffer allocation failed, skipped\n", c.variant->label.c_str());
    return false;
  }
  double ms = (now_s() - a) * 1e3;
  auto repacked = Ggml::take_repack_log();
  std::printf("%s: weights uploaded in %.1f ms%s", c.variant->label.c_str(), ms, repacked.empty() ? "\n" : "");
  if (!repacked.empty())  // ggml's own log, e.g. "repack: repack tensor leaf_0 with q4_K_8x8"
    std::printf(", %zu tensors repacked by ggml (last: \"%s\")\n", repacked.size(), repacked.back().c_str());
  return true;
}

struct Shape { const char* name; int64_t m, n, k; };
constexpr int kMaxThreads = 256;  // --threads beyond this are capped

void bench_gate_up(const Options& o, const Shape& s, const GgmlPeer& peer, const std::vector<PeakResult>& peak_by_threads) {
  std::printf("\n== Gate-Up SwiGLU %s: M=%lld N=%lld (x2) K=%lld, %.1f G MAC ==\n", s.name, (long long)s.m,
              (long long)s.n, (long long)s.k, double(s.m) * 2 * s.n * s.k / 1e9);
  auto gq = random_q4k(s.n, s.k, 1), uq = random_q4k(s.n, s.k, 2);
  double t0 = now_s();
  const std::string isa = isa_name(o.isa);
  PackedWeights gw = repack_q4_K(gq.data(), s.n, s.k, panel_cols(o.isa), 2);
  PackedWeights uw = repack_q4_K(uq.data(), s.n, s.k, panel_cols(o.isa), 2);
  std::printf("repack gate+up (%.1f MB, 2 threads): %.1f ms\n", double(gw.bytes() + uw.bytes()) / 1e6,
              (now_s() - t0) * 1e3);
  auto xf = random_floats(size_t(s.m * s.k), 3);
  const int64_t nbk = s.k / 256;
  std::vector<quant::BlockQ8_K> xq(size_t(s.m * nbk));
  t0 = now_s();
  for (int64_t r = 0; r < s.m; ++r) quant::quantize_row_q8_K(xf.data() + r * s.k, xq.data() + r * nbk, s.k);
  const double quant_scalar_ms = (now_s() - t0) * 1e3;
  const std::string qisa = o.isa == IsaPath::Amx ? "avx512" : isa;  // AMX has no quantizer: AVX-512's bytes
  const JitKernel& qk = global_code_cache().get(KernelSpec::parse("op=quantize,w=f32,a=q8_K,isa=" + qisa + ",k=" + std::to_string(s.k)));
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
  KernelSpec spec = KernelSpec::parse("op=swiglu,w=q4_K,a=q8_K,isa=" + isa + ",ep=swiglu," + o.prefill_blocks + ",k=" + std::to_string(s.k));
  const JitKernel& k = global_code_cache().get(spec);
  std::printf("kernel %s (%zu bytes); activation quantization: scalar 1 thread %.1f ms\n",
              spec.to_string().c_str(), k.size(), quant_scalar_ms);
  const double macs = double(s.m) * 2 * s.n * s.k;

  // ggml: g = W_g x, u = W_u x, y = silu(g) * u, from the same Q4_K blocks and f32 activations.
  std::vector<GgmlCase> cases;
  if (peer.gg)
    for (const auto& v : peer.variants) {
      GgmlCase c{&v, std::make_unique<GgmlGraph>(*peer.gg, v.weight_buft), {}};
      GgmlGraph& gr = *c.graph;
      void* x = gr.input_f32(xf.data(), s.k, s.m);
      void* out = gr.swiglu(gr.mul_mat(gr.weight_q4k(gq.data(), s.k, s.n), x),
                            gr.mul_mat(gr.weight_q4k(uq.data(), s.k, s.n), x));
      gr.output(out);
      c.outputs.push_back(out);
      if (upload_case(c)) cases.push_back(std::move(c));
    }
  for (int nt : o.threads) {
    double t = 0, quant_ms = 0;
    {
      Team team(nt);
      std::vector<double> qruns;
      for (int r = 0; r < o.runs; ++r) {
        double a = now_s();
        quantize(team);
        qruns.push_back(now_s() - a);
      }
      quant_ms = median(qruns) * 1e3;
      run_split(team, k, op, s.m, s.n, o.mb);  // warm-up
      std::vector<double> runs;
      for (int r = 0; r < o.runs; ++r) {
        double a = now_s();
        run_split(team, k, op, s.m, s.n, o.mb);
        runs.push_back(now_s() - a);
      }
      t = median(runs);
      double tmin = *std::min_element(runs.begin(), runs.end());
      double peak = peak_by_threads[size_t(nt)].gmacs;
      std::printf("%-36s %d thread%s: %8.1f ms  %7.1f GMAC/s  %5.1f%% of %s peak (best run %.1f ms, %.1f%%)", "ckjit",
                  nt, plural(nt), t * 1e3, macs / t / 1e9, 100.0 * macs / t / 1e9 / peak,
                  peak_by_threads[size_t(nt)].mix, tmin * 1e3, 100.0 * macs / tmin / 1e9 / peak);
      std::printf("  (+ JIT quantize %.2f ms = %.1f ms)\n", quant_ms, t * 1e3 + quant_ms);
    }  // the team has ended: no worker spins and the caller has its original CPU set back
    for (auto& c : cases) {
      double gt = time_ggml(peer, *c.graph, nt, o.runs, c.variant->label.c_str());
      double diff = normwise_diff(c.graph->data(c.outputs[0]), y.data(), y.size());
      std::printf("%-36s %d thread%s: %8.1f ms  %7.1f GMAC/s  -> ckjit is %.2fx (incl. quantize %.2fx); max diff / max |y| %.1e\n",
                  c.variant->label.c_str(), nt, plural(nt), gt * 1e3, macs / gt / 1e9, gt / t, gt / (t + quant_ms / 1e3), diff);
    }
  }
}

void bench_decode(const Options& o, const GgmlPeer& peer, const std::vector<double>& dram_gbs_by_threads) {
  const int64_t n = 6144, k = 2048, layers = 28;
  std::printf("\n== Decode GEMV 2B: M=1 N=%lld K=%lld, %lld distinct weight copies (from DRAM) ==\n",
              (long long)n, (long long)k, (long long)layers);
  KernelSpec gemv, sw;
  if (o.decode_blocks.empty()) {
    // The blocks `ckjit run` decodes with: the planner's pick for these shapes on this machine,
    // its ISA capped to the path timed (--isa may ask for less than the CPU has).
    topo::Machine machine = topo::detect_machine();
    machine.isa = topo::cap_isa(machine.isa, isa_name(o.isa));
    gemv = planner::jit_spec_for(planner::plan_op({OpKind::gemv, TensorType::Q4_K, 1, n, k}, machine));
    sw = planner::jit_spec_for(planner::plan_op({OpKind::gate_up_swiglu, TensorType::Q4_K, 1, n, k}, machine));
  } else {
    const std::string isa = isa_name(o.isa == IsaPath::Amx ? IsaPath::Avx512 : o.isa);  // no AMX GEMV: AVX-512, as Linear
    gemv = KernelSpec::parse("op=gemv,w=q4_K,a=q8_K,isa=" + isa + "," + o.decode_blocks + ",k=" + std::to_string(k));
    sw = KernelSpec::parse("op=swiglu,w=q4_K,a=q8_K,isa=" + isa + ",ep=swiglu," + o.decode_blocks + ",k=" + std::to_string(k));
  }
  const int panel = panel_cols(gemv.isa);
  std::vector<std::vector<quant::BlockQ4_K>> raw;
  std::vector<PackedWeights> w, w2;
  for (int64_t l = 0; l < layers; ++l) {
    raw.push_back(random_q4k(n, k, uint32_t(100 + l)));
    w.push_back(repack_q4_K(raw.back().data(), n, k, panel, 2));
    auto up = random_q4k(n, k, uint32_t(200 + l));
    w2.push_back(repack_q4_K(up.data(), n, k, panel, 2));
  }
  auto xf = random_floats(size_t(k), 7);
  std::vector<quant::BlockQ8_K> xq(size_t(k / 256));
  quant::quantize_row_q8_K(xf.data(), xq.data(), k);
  std::vector<float> y(static_cast<size_t>(n)), y0(static_cast<size_t>(n));  // y0: layer 0's gemv
  std::printf("kernels: %s; %s%s\n", gemv.to_string().c_str(), sw.to_string().c_str(),
              o.decode_blocks.empty() ? " (the planner's blocks)" : "");
  const JitKernel& kg = global_code_cache().get(gemv);
  const JitKernel& ks = global_code_cache().get(sw);
  const double bytes = double(w[0].bytes());
  auto operands = [&](int64_t l, bool fused, float* out) {
    MatmulOperands op;
    op.w = &w[size_t(l)];
    op.w2 = fused ? &w2[size_t(l)] : nullptr;
    op.x = xq.data();
    op.ldx = 0;
    op.y = out;
    op.ldy = 0;
    return op;
  };

  // ggml: one graph of `layers` independent mul_mats y_l = W_l x (ggml quantizes x itself).
  std::vector<GgmlCase> cases;
  if (peer.gg)
    for (const auto& v : peer.variants) {
      GgmlCase c{&v, std::make_unique<GgmlGraph>(*peer.gg, v.weight_buft), {}};
      GgmlGraph& gr = *c.graph;
      void* x = gr.input_f32(xf.data(), k, 1);
      for (int64_t l = 0; l < layers; ++l) {
        c.outputs.push_back(gr.mul_mat(gr.weight_q4k(raw[size_t(l)].data(), k, n), x));
        gr.output(c.outputs.back());
      }
      if (upload_case(c)) cases.push_back(std::move(c));
    }
  const double gb = double(raw[0].size() * sizeof(quant::BlockQ4_K));
  // DRAM bandwidth on this shared VM drifts by 20-40% from minute to minute, so everything is timed
  // in interleaved rounds: per round one read-probe pass (1, 2, 4 streams in turn), one pass of
  // each ckjit kernel over the 28 matrices, then (the team gone) one pass of each ggml graph. The
  // % figures are against the best probe pass; the ratios are medians of per-round ratios.
  const size_t probe_bytes = size_t(1) << 30;  // 32x the L3: its scan-resistant policy keeps hits negligible
  auto* probe_buf = static_cast<uint8_t*>(std::aligned_alloc(4096, probe_bytes));
  std::memset(probe_buf, 1, probe_bytes);
  std::vector<std::unique_ptr<planner::ReadLoop>> probes;
  const bool zmm_reads = runtime_isa().avx512f;  // the probe's zmm loads need AVX-512 allowed, not the path timed
  for (int streams : {1, 2, 4}) probes.push_back(std::make_unique<planner::ReadLoop>(streams, zmm_reads));
  for (int nt : o.threads) {
    double bw = dram_gbs_by_threads[size_t(nt)];  // the best seen: the earlier probe or any pass in the window
    std::vector<double> t_ck[2];
    std::vector<std::vector<double>> t_gg(cases.size()), ratio(cases.size());
    for (int r = 0; r <= o.runs; ++r) {  // round 0 warms up
      double read = 0, t_round[2] = {0, 0};
      {
        Team team(nt);
        read = read_pass_gbs(team, *probes[size_t(r % 3)], probe_buf, probe_bytes);
        for (int fused = 0; fused < 2; ++fused) {
          double a = now_s();
          for (int64_t l = 0; l < layers; ++l) run_split(team, fused ? ks : kg, operands(l, fused, y.data()), 1, n, 1);
          t_round[fused] = (now_s() - a) / layers;
        }
        if (r == 0) run_split(team, kg, operands(0, false, y0.data()), 1, n, 1);
      }  // the team has ended: no worker spins and the caller has its original CPU set back
      if (r == 0) continue;
      bw = std::max(bw, read);
      for (int fused = 0; fused < 2; ++fused) t_ck[fused].push_back(t_round[fused]);
      for (size_t c = 0; c < cases.size(); ++c) {
        double gt = time_ggml(peer, *cases[c].graph, nt, 1, cases[c].variant->label.c_str()) / layers;
        t_gg[c].push_back(gt);
        ratio[c].push_back(gt / t_round[0]);
      }
    }
    std::printf("DRAM read, best of the probe before the runs (%.1f GB/s) and %d passes interleaved with the kernels (%d thread%s): %.1f GB/s\n",
                dram_gbs_by_threads[size_t(nt)], o.runs, nt, plural(nt), bw);
    for (int fused = 0; fused < 2; ++fused) {
      double t = median(t_ck[fused]), b = bytes * (fused ? 2 : 1);
      std::printf("ckjit  %-29s %d thread%s: %7.1f us/matrix  %6.1f GB/s  %5.1f%% of DRAM read bandwidth (%.1f MB read)\n",
                  fused ? "gate+up fused (2 matrices)" : "gemv", nt, plural(nt), t * 1e6, b / t / 1e9,
                  100.0 * b / t / 1e9 / bw, b / 1e6);
    }
    for (size_t c = 0; c < cases.size(); ++c) {
      double gt = median(t_gg[c]);
      double diff = normwise_diff(cases[c].graph->data(cases[c].outputs[0]), y0.data(), y0.size());
      std::printf("%-36s %d thread%s: %7.1f us/matrix  %6.1f GB/s  %5.1f%% of DRAM read bandwidth -> ckjit gemv is %.2fx (median of per-round ratios %.2f-%.2f); max diff / max |y| %.1e\n",
                  cases[c].variant->label.c_str(), nt, plural(nt), gt * 1e6, gb / gt / 1e9, 100.0 * gb / gt / 1e9 / bw,
                  median(ratio[c]), *std::min_element(ratio[c].begin(), ratio[c].end()),
                  *std::max_element(ratio[c].begin(), ratio[c].end()), diff);
    }
  }
  std::free(probe_buf);
}

}  // namespace

int main(int argc, char** argv) try {
  GgmlPeer peer;
  peer.caller_cpus = current_affinity();  // before any team pins this thread
  Options o;
  std::string forced_isa;
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
        o.threads.push_back(std::max(1, std::min(kMaxThreads, std::stoi(v.substr(p, c - p)))));
        p = c == std::string::npos ? v.size() : c + 1;
      }
    } else if (a == "--runs") o.runs = std::max(1, std::stoi(next()));
    else if (a == "--mb") o.mb = std::max(1, std::stoi(next()));
    else if (a == "--only") o.only = next();
    else if (a == "--no-ggml") o.ggml = false;
    else if (a == "--prefill-blocks") o.prefill_blocks = next();
    else if (a == "--decode-blocks") o.decode_blocks = next();
    else if (a == "--ggml-dir") o.ggml_dir = next();
    else if (a == "--isa") forced_isa = next();
    else { std::fprintf(stderr, "usage: bench_kernels [--threads 1,2] [--runs N] [--mb ROWS] [--only prefill|prefill-8b|prefill-2b|decode] [--no-ggml] [--isa amx|avx512|avxvnni|avx2] [--prefill-blocks mr=6,nr=2] [--decode-blocks mr=1,nr=1 (default: the planner's)] [--ggml-dir DIR]\n"); return 2; }
  }
  // The path timed: --isa, else the best of avx512 / avxvnni (VEX) / avx2 this process may run.
  const topo::Isa isa = runtime_isa();
  const IsaPath paths[] = {IsaPath::Avx512, IsaPath::AvxVnni, IsaPath::Avx2, IsaPath::Amx};  // amx only when asked
  const IsaPath* path = std::find_if(std::begin(paths), std::end(paths), [&](IsaPath p) {
    return forced_isa.empty() ? p != IsaPath::Amx && isa_runs(p, isa) : forced_isa == isa_name(p);
  });
  if (path == std::end(paths)) {
    if (!forced_isa.empty()) { std::fprintf(stderr, "--isa must be amx, avx512, avxvnni or avx2, not '%s'\n", forced_isa.c_str()); return 2; }
    std::printf("ckjit's kernels need at least AVX2 + FMA + F16C; this CPU (or CKJIT_MAX_ISA) has %s\n", isa.to_string().c_str());
    return 0;
  }
  if (!isa_runs(*path, isa)) {
    std::fprintf(stderr, "--isa %s: this CPU (or CKJIT_MAX_ISA) cannot run that path (isa: %s)\n", forced_isa.c_str(),
                 isa.to_string().c_str());
    return 2;
  }
  o.isa = *path;
  if (o.prefill_blocks.empty())  // the largest fast SwiGLU block of each path's registers
    o.prefill_blocks = o.isa == IsaPath::Amx      ? "mr=16,nr=2"
                       : o.isa == IsaPath::Avx512 ? "mr=6,nr=2"
                       : o.isa == IsaPath::AvxVnni ? "mr=4,nr=2"
                                                   : "mr=2,nr=2";
  const planner::DotProbe probe = int8_probe(o.isa);
  std::printf("machine: %s\nisa: %s\nkernel path: %s (%s)\n", cpu_name().c_str(), isa.to_string().c_str(),
              isa_name(o.isa), forced_isa.empty() ? "the best this CPU allows" : "--isa");
  std::printf("load average at start: %s\n", load_average().c_str());
  std::printf("times: median of %d runs after a warm-up; peaks and bandwidth: best of 5 runs\n", o.runs);
  std::vector<PeakResult> peak(size_t(kMaxThreads) + 1, PeakResult{0, 0, ""});
  std::vector<double> dram(size_t(kMaxThreads) + 1, 0.0);
  for (int nt : o.threads) {
    Team team(nt);
    PeakResult p = int8_peak(team, probe);
    peak[size_t(nt)] = p;
    dram[size_t(nt)] = dram_read_gbs(team, size_t(1) << 30, isa.avx512f);
    std::printf("measured %d thread%s: %s peak %.1f GMAC/s (best with %d accumulators), DRAM read %.1f GB/s\n",
                nt, nt > 1 ? "s" : " ", p.mix, p.gmacs, p.accs, dram[size_t(nt)]);
  }
  Ggml ggml(o.ggml ? o.ggml_dir : std::string("(disabled)"), {"zen4", "icelake", "skylakex", "haswell", "x64"});
  peer.gg = ggml.ok() ? &ggml : nullptr;
  std::printf("ggml: %s\n", peer.gg ? ("libggml-cpu-" + ggml.variant() + ".so from " + o.ggml_dir).c_str()
                                     : ("not available (" + ggml.error() + ")").c_str());
  if (peer.gg) {
    peer.variants.push_back({"ggml (plain mul_mat)", ggml.cpu_buffer_type()});
    std::string found;
    if (void* repack = ggml.extra_buffer_type("CPU_REPACK", found))
      peer.variants.push_back({"ggml (CPU_REPACK, llama.cpp's path)", repack});
    else
      std::printf("ggml CPU_REPACK buffer type: NOT available in this build (CPU extra buffer types: %s); "
                  "only the plain mul_mat is compared\n", found.c_str());
    std::printf("ggml weight buffers: %s%s%s; ggml runs with the caller's CPU set %s and no ckjit team alive\n",
                ggml.buft_name(ggml.cpu_buffer_type()), peer.variants.size() > 1 ? " and " : "",
                peer.variants.size() > 1 ? ggml.buft_name(peer.variants[1].weight_buft) : "", cpu_list(peer.caller_cpus).c_str());
  }
  if (o.only.empty() || o.only == "prefill" || o.only == "prefill-8b") bench_gate_up(o, {"8B", 1028, 12288, 4096}, peer, peak);
  if (o.only.empty() || o.only == "prefill" || o.only == "prefill-2b") bench_gate_up(o, {"2B", 1038, 6144, 2048}, peer, peak);
  if (o.only.empty() || o.only == "decode") bench_decode(o, peer, dram);
  std::printf("\nload average at end: %s\n", load_average().c_str());
  return 0;
} catch (const std::exception& e) {  // a bad --prefill-blocks / --decode-blocks spec, a failed allocation
  std::fprintf(stderr, "bench_kernels: %s\n", e.what());
  return 1;
}
