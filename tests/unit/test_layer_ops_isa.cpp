// Attention and swiglu give the same bits on every ISA path: the AVX2 copy and the portable twin
// against a scalar emulation of llama.cpp's AVX-512 float order written out here (runs on every
// CPU) and against each other, and against the AVX-512 copy byte for byte where AVX-512 runs
// (reported SKIPPED elsewhere).
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "graph/layer_ops.h"
#include "jit/isa_select.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"

using namespace ckjit;
using namespace ckjit::graph;

namespace {

topo::Isa avx2_isa() { return topo::cap_isa(jit::runtime_isa(), "avx2"); }

// Sets isa to the runtime ISA and says whether it runs both AVX-512 implementations.
bool avx512_runs(topo::Isa& isa) {
  isa = jit::runtime_isa();
  return isa.avx512f && isa.avx512dq && isa.avx2 && isa.fma && isa.f16c;
}

float h2f(uint16_t h) { return quant::f16_to_f32(h); }
uint16_t f2h(float f) { return quant::f32_to_f16(f); }

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  // memcmp's pointers must not be null, even for 0 bytes (UBSan): empty vectors have none.
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// ---- scalar emulation of ggml's AVX-512 flash-attention row ----

// ggml_vec_dot_f16: 4 accumulators of 16 lanes over 64-element steps, (a0+a2)+(a1+a3), then GCC's
// _mm512_reduce_add_ps tree (256-bit halves, 128-bit halves, {2,3,0,1} shuffle, lanes 0+1), tail in
// double.
float dot_ref(const uint16_t* x, const uint16_t* y, int64_t n) {
  const int64_t np = n & ~int64_t(63);
  float a[4][16] = {};
  for (int64_t i = 0; i < np; i += 64)
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 16; ++l) {
        const int64_t e = i + 16 * j + l;
        a[j][l] = std::fma(h2f(x[e]), h2f(y[e]), a[j][l]);
      }
  float s[16];
  for (int l = 0; l < 16; ++l) s[l] = (a[0][l] + a[2][l]) + (a[1][l] + a[3][l]);
  float t3[8], t6[4];
  for (int l = 0; l < 8; ++l) t3[l] = s[8 + l] + s[l];
  for (int l = 0; l < 4; ++l) t6[l] = t3[4 + l] + t3[l];
  const float t8_0 = t6[0] + t6[2], t8_1 = t6[1] + t6[3];
  double sumf = double(t8_0 + t8_1);
  for (int64_t i = np; i < n; ++i) sumf += double(h2f(x[i]) * h2f(y[i]));
  return float(sumf);
}

void attention_row_ref(const AttentionShape& s, const float* q, int64_t n_keys, const uint16_t* kb, const uint16_t* vb,
                       int64_t kv_width, float* out) {
  const int64_t D = s.head_dim;
  std::vector<uint16_t> qh(static_cast<size_t>(D)), acc(static_cast<size_t>(D), 0);
  for (int64_t d = 0; d < D; ++d) qh[size_t(d)] = f2h(q[d]);
  float S = 0.0f, M = -INFINITY;
  for (int64_t j = 0; j < n_keys; ++j) {
    const float sc = dot_ref(kb + j * kv_width, qh.data(), D) * s.scale;
    const float Mold = M;
    float ms = 1.0f, vs = 1.0f;
    if (sc > M) {
      M = sc;
      ms = std::exp(Mold - M);
      for (auto& a : acc) a = f2h(h2f(a) * ms);
    } else {
      vs = std::exp(sc - M);
    }
    const uint16_t* v = vb + j * kv_width;
    for (int64_t d = 0; d < D; ++d) acc[size_t(d)] = f2h(std::fma(h2f(v[d]), vs, h2f(acc[size_t(d)])));
    S = std::fma(S, ms, vs);
  }
  const float inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int64_t d = 0; d < D; ++d) out[d] = h2f(acc[size_t(d)]) * inv;
}

struct KvCase {
  AttentionShape s;
  int64_t n_ctx;
  std::vector<float> q;
  std::vector<uint16_t> k, v;
};

// Random Q/K/V; the last key of every KV head (and one at 3/4) points along that head's first query,
// so a new, much larger maximum arrives late and the f16 V buffer is rescaled.
KvCase make_case(int64_t n_head, int64_t n_head_kv, int64_t D, int64_t n_ctx, int64_t m, uint32_t seed) {
  KvCase c{{n_head, n_head_kv, D, 1.0f / std::sqrt(float(D))}, n_ctx, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  c.q.resize(size_t(m * n_head * D));
  for (auto& x : c.q) x = nd(rng) * 2.0f;
  std::vector<float> kf(size_t(n_ctx * n_head_kv * D)), vf(kf.size());
  for (auto& x : kf) x = nd(rng);
  for (auto& x : vf) x = nd(rng) * 3.0f;
  const int64_t group = n_head / n_head_kv;
  for (int64_t h = 0; h < n_head_kv; ++h)
    for (int64_t j : {n_ctx * 3 / 4, n_ctx - 1})
      for (int64_t d = 0; d < D; ++d) kf[size_t(j * n_head_kv * D + h * D + d)] = 2.5f * c.q[size_t(h * group * D + d)];
  c.k.resize(kf.size());
  c.v.resize(vf.size());
  for (size_t i = 0; i < kf.size(); ++i) c.k[i] = f2h(kf[i]), c.v[i] = f2h(vf[i]);
  return c;
}

// Output of op.run over m query rows ending at position n_ctx - 1.
std::vector<float> run_attention(const Attention& op, const KvCase& c, int64_t m, int threads) {
  Workers pool(threads);
  const int64_t per = attention_scratch_floats(c.s.head_dim, c.n_ctx);
  std::vector<float> out(c.q.size()), scratch(size_t(threads * per));
  op.run(pool, c.s, c.q.data(), m, c.n_ctx - m, c.k.data(), c.v.data(), out.data(), scratch.data(), per);
  return out;
}

std::vector<float> ref_attention(const KvCase& c, int64_t m) {
  const int64_t D = c.s.head_dim, qw = c.s.n_head * D, kvw = c.s.n_head_kv * D, group = c.s.n_head / c.s.n_head_kv;
  std::vector<float> out(c.q.size());
  for (int64_t i = 0; i < m; ++i)
    for (int64_t h = 0; h < c.s.n_head; ++h)
      attention_row_ref(c.s, c.q.data() + i * qw + h * D, c.n_ctx - m + i + 1, c.k.data() + h / group * D,
                        c.v.data() + h / group * D, kvw, out.data() + i * qw + h * D);
  return out;
}

// ---- scalar emulation of ggml's AVX-512 swiglu ----

// ggml_v_expf on one lane; scalef(p, n) as the exact double p * 2^n rounded once to float.
float exp_llama_ref(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float p = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                           u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  if (std::fabs(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  return float(std::ldexp(double(p), int(n)));
}

void swiglu_ref(const float* g, const float* u, float* y, int64_t n) {
  const int64_t nv = n / 16 * 16;
  for (int64_t i = 0; i < nv; ++i) {
    const float e = exp_llama_ref(0.0f - g[i]);
    y[i] = g[i] / (1.0f + e) * u[i];
  }
  for (int64_t i = nv; i < n; ++i) y[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
}

// Gate values over the whole range: moderate, the exp overflow/underflow edges (|x| near 88-104),
// the `big` lanes (|n| > 192, |x| > 133), huge and infinite; up values that make denormal products.
void swiglu_inputs(int64_t n, uint32_t seed, std::vector<float>& g, std::vector<float>& u) {
  static const float special[] = {0.0f,   -0.0f,   1e-30f,  -1e-30f,  88.0f,  -88.0f,   88.72f, -88.72f, 88.8f,   -88.8f,
                                  89.0f,  -89.0f,  95.0f,   -95.0f,   103.0f, -103.0f,  104.0f, -104.0f, 120.0f,  -120.0f,
                                  133.0f, -133.0f, 133.1f,  -133.1f,  133.5f, -133.5f,  140.0f, -140.0f, 1e4f,    -1e4f,
                                  1e30f,  -1e30f,  INFINITY, -INFINITY, 3.0f, -3.0f, 20.0f, -20.0f, 87.3f, -87.3f};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd;
  std::uniform_real_distribution<float> wide(-150.0f, 150.0f);
  g.resize(static_cast<size_t>(n));
  u.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t kind = rng() % 4;
    g[size_t(i)] = kind == 0 ? special[rng() % (sizeof special / sizeof special[0])] : kind == 1 ? wide(rng) : nd(rng) * 4.0f;
    u[size_t(i)] = rng() % 3 == 0 ? nd(rng) * 1e-39f : nd(rng);  // denormal results from tiny u
  }
}

// Gate values whose swiglu differs between the polynomial (16-element chunks) and std::exp (the
// tail): placed in the tail, they catch a path that moves the chunk/tail boundary.
std::vector<float> tail_sensitive_gates(size_t count) {
  std::mt19937 rng(77);
  std::normal_distribution<float> nd;
  std::vector<float> out;
  while (out.size() < count) {
    const float g = nd(rng) * 4.0f;
    if (g / (1.0f + exp_llama_ref(0.0f - g)) != g / (1.0f + std::exp(-g))) out.push_back(g);
  }
  return out;
}

}  // namespace

TEST_SUITE("decoder") {
TEST_CASE("layer ops isa: Attention and SwiGLU pick their copy once from the Isa") {
  CHECK(std::string(Attention(avx2_isa()).impl()) == "avx2");
  CHECK(std::string(SwiGLU(avx2_isa()).impl()) == "avx2");
  topo::Isa wide = avx2_isa();
  wide.avx512f = true;
  CHECK(std::string(Attention(wide).impl()) == "avx512");
  CHECK(std::string(SwiGLU(wide).impl()) == "avx2");  // swiglu also needs DQ
  wide.avx512dq = true;
  CHECK(std::string(SwiGLU(wide).impl()) == "avx512");
  // Below the AVX2 + FMA + F16C copies: the portable twins.
  topo::Isa old;
  old.sse42 = old.avx = true;
  CHECK(std::string(Attention(old).impl()) == "portable");
  CHECK(std::string(SwiGLU(old).impl()) == "portable");
}

TEST_CASE("layer ops isa: the portable attention twin gives the AVX2 copy's bytes") {
  const Attention avx2(avx2_isa()), portable{topo::Isa{}};
  REQUIRE(std::string(avx2.impl()) == "avx2");  // the copy compared against is the x86 one
  REQUIRE(std::string(portable.impl()) == "portable");
  for (int64_t D : {16, 64, 72, 128})
    for (int64_t n_keys : {1, 2, 17, 300}) {
      const int64_t m = std::min<int64_t>(n_keys, 3);
      const KvCase c = make_case(6, 2, D, n_keys, m, uint32_t(D * 13 + n_keys));
      CAPTURE(D);
      CAPTURE(n_keys);
      const std::vector<float> p = run_attention(portable, c, m, 2);
      CHECK(same_bits(p, ref_attention(c, m)));
      CHECK(same_bits(p, run_attention(avx2, c, m, 1)));
    }
}

TEST_CASE("layer ops isa: AVX2 attention equals the scalar emulation of llama.cpp's AVX-512 order") {
  const Attention avx2(avx2_isa());
  REQUIRE(std::string(avx2.impl()) == "avx2");
  int rows = 0;
  for (int64_t D : {16, 64, 72, 128})
    for (int64_t n_keys : {1, 2, 17, 300}) {
      const KvCase c = make_case(4, 2, D, n_keys, 1, uint32_t(D * 1000 + n_keys));
      const int64_t m = std::min<int64_t>(n_keys, 3);  // rows at positions n_keys-m .. n_keys-1
      const KvCase cm = make_case(4, 2, D, n_keys, m, uint32_t(D * 1000 + n_keys));
      CAPTURE(D);
      CAPTURE(n_keys);
      CHECK(same_bits(run_attention(avx2, cm, m, 1), ref_attention(cm, m)));
      CHECK(same_bits(run_attention(avx2, cm, m, 3), ref_attention(cm, m)));  // thread count
      // one row through row() directly
      std::vector<float> got(static_cast<size_t>(D)), want(static_cast<size_t>(D));
      std::vector<uint16_t> scratch(static_cast<size_t>(2 * D));
      std::vector<float> scores(static_cast<size_t>(n_keys));
      avx2.row()(c.s, c.q.data(), n_keys, c.k.data(), c.v.data(), 2 * D, got.data(), scratch.data(), scratch.data() + D,
                 scores.data());
      attention_row_ref(c.s, c.q.data(), n_keys, c.k.data(), c.v.data(), 2 * D, want.data());
      CHECK(same_bits(got, want));
      ++rows;
    }
  // GQA groups of 1, 3 and 8 heads per KV head.
  for (const auto& hq_hkv_ : {std::pair<int64_t, int64_t>{2, 2}, {6, 2}, {8, 1}}) {
    const auto& hq = std::get<0>(hq_hkv_);
    const auto& hkv = std::get<1>(hq_hkv_);
    const KvCase c = make_case(hq, hkv, 128, 40, 5, uint32_t(hq * 10 + hkv));
    CAPTURE(hq);
    CHECK(same_bits(run_attention(avx2, c, 5, 2), ref_attention(c, 5)));
  }
  CHECK(rows == 16);
}

TEST_CASE("layer ops isa: AVX2 and AVX-512 attention give the same bytes") {
  topo::Isa isa;
  if (!avx512_runs(isa)) {
    CKJIT_SKIP("AVX-512 not usable here (or capped by CKJIT_MAX_ISA): AVX2 vs AVX-512 attention not compared");
  }
  const Attention avx2(avx2_isa()), avx512(isa);
  REQUIRE(std::string(avx512.impl()) == "avx512");
  for (int64_t D : {64, 72, 128})
    for (int64_t n_keys : {1, 2, 17, 300}) {
      const int64_t m = std::min<int64_t>(n_keys, 3);
      const KvCase c = make_case(6, 2, D, n_keys, m, uint32_t(D * 7 + n_keys));
      CAPTURE(D);
      CAPTURE(n_keys);
      CHECK(same_bits(run_attention(avx2, c, m, 2), run_attention(avx512, c, m, 3)));
    }
}

TEST_CASE("layer ops isa: AVX2 swiglu equals the scalar emulation of llama.cpp's AVX-512 swiglu") {
  const SwiGLU avx2(avx2_isa());
  REQUIRE(std::string(avx2.impl()) == "avx2");
  for (int64_t n : {0, 1, 15, 16, 17, 33, 1000, 4096}) {
    std::vector<float> g, u;
    swiglu_inputs(n, uint32_t(n + 3), g, u);
    std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
    avx2.run(g.data(), u.data(), got.data(), n);
    swiglu_ref(g.data(), u.data(), want.data(), n);
    CAPTURE(n);
    CHECK(same_bits(got, want));
  }
  // Tails (n % 16 elements) that only llama.cpp's scalar tail gets right.
  const std::vector<float> sens = tail_sensitive_gates(64);
  for (int64_t n : {1, 7, 8, 9, 15, 24, 31, 33, 40, 1000, 1015}) {
    std::vector<float> g, u;
    swiglu_inputs(n, uint32_t(n + 5), g, u);
    for (int64_t i = n / 16 * 16; i < n; ++i) g[size_t(i)] = sens[size_t(i % 64)], u[size_t(i)] = 1.0f;
    std::vector<float> got(static_cast<size_t>(n)), want(static_cast<size_t>(n));
    avx2.run(g.data(), u.data(), got.data(), n);
    swiglu_ref(g.data(), u.data(), want.data(), n);
    CAPTURE(n);
    CHECK(same_bits(got, want));
  }
  // Every float of one exponent range sweeps the polynomial and the scalef edge cases densely.
  std::vector<float> g, u(1 << 16, 1.0f), got(u.size()), want(u.size());
  for (int i = 0; i < (1 << 16); ++i) g.push_back(-160.0f + 320.0f * float(i) / float(1 << 16));
  avx2.run(g.data(), u.data(), got.data(), int64_t(g.size()));
  swiglu_ref(g.data(), u.data(), want.data(), int64_t(g.size()));
  CHECK(same_bits(got, want));
}

TEST_CASE("layer ops isa: the portable swiglu twin gives the AVX2 copy's bytes") {
  const SwiGLU avx2(avx2_isa()), portable{topo::Isa{}};
  REQUIRE(std::string(avx2.impl()) == "avx2");
  REQUIRE(std::string(portable.impl()) == "portable");
  auto both = [&](const std::vector<float>& g, const std::vector<float>& u) {
    const int64_t n = int64_t(g.size());
    std::vector<float> a(g.size()), b(g.size()), want(g.size());
    avx2.run(g.data(), u.data(), a.data(), n);
    portable.run(g.data(), u.data(), b.data(), n);
    swiglu_ref(g.data(), u.data(), want.data(), n);
    CHECK(same_bits(a, b));
    CHECK(same_bits(b, want));
  };
  for (int64_t n : {0, 1, 15, 16, 17, 33, 1000, 4096}) {
    std::vector<float> g, u;
    swiglu_inputs(n, uint32_t(n + 17), g, u);
    CAPTURE(n);
    both(g, u);
  }
  std::vector<float> g, u(1 << 16, 1.0f);
  for (int i = 0; i < (1 << 16); ++i) g.push_back(-160.0f + 320.0f * float(i) / float(1 << 16));
  both(g, u);
}

TEST_CASE("layer ops isa: AVX2 and AVX-512 swiglu give the same bytes") {
  topo::Isa isa;
  if (!avx512_runs(isa)) {
    CKJIT_SKIP("AVX-512 not usable here (or capped by CKJIT_MAX_ISA): AVX2 vs AVX-512 swiglu not compared");
  }
  const SwiGLU avx2(avx2_isa()), avx512(isa);
  REQUIRE(std::string(avx512.impl()) == "avx512");
  for (int64_t n : {1, 15, 16, 33, 1000, 4096}) {
    std::vector<float> g, u;
    swiglu_inputs(n, uint32_t(n + 11), g, u);
    std::vector<float> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
    avx2.run(g.data(), u.data(), a.data(), n);
    avx512.run(g.data(), u.data(), b.data(), n);
    CAPTURE(n);
    CHECK(same_bits(a, b));
  }
}
}
