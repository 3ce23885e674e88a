// The vision tower's hot ops on this machine: DenseLinear (op=dense JIT) GFLOP/s for the 2B tower's
// shapes, and the tiled attention, at a page's patch count. Medians of 3; `ckjit info` names the
// machine. Usage: bench_vision [PATCHES=4096] [THREADS=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "topology/workers.h"
#include "jit/isa_select.h"
#include "topology/machine.h"
#include "vision/dense_linear.h"
#include "vision/vision_ops.h"

using namespace ckjit;
using Clock = std::chrono::steady_clock;

template <class F>
double median_ms(F&& f) {
  std::vector<double> t;
  for (int r = 0; r < 3; ++r) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[1];
}

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : 4096;
  const int threads = argc > 2 ? std::atoi(argv[2]) : 2;
  std::printf("machine: %s\n", topo::detect_machine().name().c_str());
  Workers pool(threads);
  std::mt19937 g(1);
  std::normal_distribution<float> d(0.0f, 0.05f);
  const topo::Isa isa = jit::runtime_isa();
  struct Shape { const char* name; int64_t k, n; };
  for (Shape s : {Shape{"qkv", 1024, 3072}, Shape{"attn_out", 1024, 1024}, Shape{"ffn_up", 1024, 4096}, Shape{"ffn_down", 4096, 1024},
                  Shape{"mm.0", 4096, 4096}}) {
    const int64_t m = s.name[0] == 'm' ? n / 4 : n;
    std::vector<float> w(size_t(s.k * s.n)), x(size_t(m * s.k)), y(size_t(m * s.n));
    for (auto& v : w) v = d(g);
    for (auto& v : x) v = d(g);
    // F16 panels, as an F16 mmproj's weights are packed.
    vision::DenseLinear lin(w, s.n, s.k, std::vector<float>(size_t(s.n), 0.0f), TensorType::F16, isa, threads, TensorType::F16);
    std::vector<float> xr(x.size());
    lin.prepare(pool, x.data(), s.k, m, xr.data());
    const double ms = median_ms([&] { lin.matmul(pool, xr.data(), m, y.data(), s.n); });
    std::printf("dense f16 %-9s M=%-5lld K=%-5lld N=%-5lld %8.1f ms %7.1f GFLOP/s\n", s.name, (long long)m, (long long)s.k,
                (long long)s.n, ms, 2.0 * double(m) * double(s.k) * double(s.n) / ms * 1e-6);
  }
  const int64_t H = 16, dh = 64, C = H * dh;
  std::vector<float> qkv(size_t(n * 3 * C)), out(size_t(n * C));
  for (auto& v : qkv) v = d(g) * 20.0f;
  const vision::VisionAttention att(n, H, dh, threads, isa);
  const double ms = median_ms([&] {
    std::vector<float> in = qkv;
    att.run(pool, in.data(), 3 * C, out.data(), C);
  });
  std::printf("attention n=%lld heads %lld x %lld: %8.1f ms %7.1f GFLOP/s\n", (long long)n, (long long)H, (long long)dh, ms,
              4.0 * double(n) * double(n) * double(C) / ms * 1e-6);
  return 0;
}
