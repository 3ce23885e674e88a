// The tiled causal attention (graph/tiled_attention.h, --attention tiled): against a naive double
// softmax over the same f16 keys and values and f16-rounded queries, for head dims 64 / 128, GQA
// groups 1 / 2 / 4 / 3, short and long contexts; the same bits for any chunking of the rows and any
// thread count; and at the session level a batched prompt equal, bit for bit, to token-by-token
// evaluation.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <random>
#include <vector>

#include "graph/kv_cache.h"
#include "graph/tiled_attention.h"
#include "jit/hand_kernels.h"
#include "jit/isa_select.h"
#include "jit/tile_softmax.h"
#include "jit/tile_softmax_twin.h"
#include "runtime/quants/quants.h"
#include "text_eval.h"
#include "tiny_qwen3vl.h"
#include "skip.h"

using namespace ckjit;
using namespace ckjit::graph;

namespace {

struct Case {
  int64_t n_head, n_head_kv, head_dim, n_ctx;
};

struct Data {
  Case c;
  std::vector<float> q, k, v;  // q: n_ctx rows of n_head*D; k, v: n_ctx rows of n_head_kv*D
  jit::IsaPath path;  // the tile's op=dense path; the cache's panels are its width
  KvCache kv;
  topo::Isa isa;  // the load's: which copies of the f16 conversions run (the portable twins under an empty Isa)
  Data(const Case& cs, uint32_t seed, jit::IsaPath p = jit::IsaPath::Avx2, const topo::Isa& load_isa = jit::runtime_isa())
      : c(cs), path(p), kv(1, cs.n_ctx, cs.n_head_kv, cs.head_dim, KvLayout::panels, jit::panel_cols(p), load_isa),
        isa(load_isa) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    q.resize(size_t(c.n_ctx * c.n_head * c.head_dim));
    k.resize(size_t(c.n_ctx * c.n_head_kv * c.head_dim));
    v.resize(k.size());
    for (auto& x : q) x = nd(rng) * 2.0f;
    for (auto& x : k) x = nd(rng);
    for (auto& x : v) x = nd(rng);
  }
  int64_t qw() const { return c.n_head * c.head_dim; }
  int64_t kvw() const { return c.n_head_kv * c.head_dim; }
  // Rows [0, n) written in chunks of `chunk`, each chunk's attention computed then: out (n rows).
  std::vector<float> attend(int64_t n, int64_t chunk, int threads) {
    const AttentionShape s{c.n_head, c.n_head_kv, c.head_dim, 1.0f / std::sqrt(float(c.head_dim))};
    TiledAttention att(s, kv.n_pad(), path, isa);
    Workers pool(threads);
    std::vector<float> scratch(size_t(att.scratch_floats() * threads)), out(size_t(n * qw()), -1.0f);
    for (int64_t p0 = 0; p0 < n; p0 += chunk) {
      const int64_t m = std::min(chunk, n - p0);
      for (int64_t r = 0; r < m; ++r) kv.write(0, p0 + r, k.data() + (p0 + r) * kvw(), v.data() + (p0 + r) * kvw());
      kv.seal(0, p0 + m);
      att.run(pool, q.data() + p0 * qw(), m, p0, kv, 0, out.data() + p0 * qw(), scratch.data());
    }
    return out;
  }
};

float f16r(float x) { return quant::f16_to_f32(quant::f32_to_f16(x)); }

}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("tiled attention: matches a naive double softmax (head dims 64 / 128 / GQA 1 / 2 / 3 / 4 / short and long contexts)") {
  for (const Case& c : {Case{2, 2, 64, 21}, Case{4, 2, 128, 300}, Case{8, 2, 64, 150}, Case{6, 2, 64, 40}, Case{16, 8, 128, 260}}) {
    CAPTURE(c.n_head);
    CAPTURE(c.head_dim);
    CAPTURE(c.n_ctx);
    Data d(c, uint32_t(c.n_ctx));
    const std::vector<float> out = d.attend(c.n_ctx, 64, 2);
    const int64_t D = c.head_dim, G = c.n_head / c.n_head_kv;
    double worst = 0;
    for (int64_t i = 0; i < c.n_ctx; i += (i < 20 ? 1 : 37))
      for (int64_t h = 0; h < c.n_head; ++h) {
        const int64_t kvh = h / G, n = i + 1;
        std::vector<double> p(static_cast<size_t>(n));
        double mx = -1e300, sum = 0;
        for (int64_t j = 0; j < n; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < D; ++e)
            dot += double(f16r(d.q[size_t(i * d.qw() + h * D + e)])) * f16r(d.k[size_t(j * d.kvw() + kvh * D + e)]);
          p[size_t(j)] = dot / std::sqrt(double(D));
          mx = std::max(mx, p[size_t(j)]);
        }
        for (auto& x : p) sum += (x = std::exp(x - mx));
        for (int64_t e = 0; e < D; ++e) {
          double o = 0;
          for (int64_t j = 0; j < n; ++j) o += p[size_t(j)] / sum * f16r(d.v[size_t(j * d.kvw() + kvh * D + e)]);
          worst = std::max(worst, std::fabs(double(out[size_t(i * d.qw() + h * D + e)]) - o));
        }
      }
    MESSAGE("worst |tiled - double reference| " << worst);
    CHECK(worst < 1e-5);
  }
}

TEST_CASE("tiled attention: the same bits for any chunking of the rows and any thread count") {
  for (const Case& c : {Case{4, 2, 64, 170}, Case{6, 2, 128, 45}}) {
    CAPTURE(c.n_ctx);
    Data d(c, 9);
    const std::vector<float> all = d.attend(c.n_ctx, c.n_ctx, 2);
    for (const auto& chunk_threads_ : {std::pair<int64_t, int>{1, 1}, {7, 3}, {64, 2}, {c.n_ctx, 1}, {c.n_ctx, 3}}) {
      const auto& chunk = std::get<0>(chunk_threads_);
      const auto& threads = std::get<1>(chunk_threads_);
      CAPTURE(chunk);
      CAPTURE(threads);
      Data e(c, 9);
      const std::vector<float> got = e.attend(c.n_ctx, chunk, threads);
      CHECK(std::memcmp(got.data(), all.data(), all.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("tiled attention: the AVX-512 tile over 16-key panels gives the AVX2 tile's bits over 8-key panels") {
  if (!jit::isa_runs(jit::IsaPath::Avx512, jit::runtime_isa())) CKJIT_SKIP("the avx512 path cannot run here");
  // Contexts that end inside a 16-key panel, on a 128-key block edge and past it; GQA 1 / 2 / 4.
  for (const Case& c : {Case{4, 2, 64, 170}, Case{6, 2, 128, 45}, Case{4, 4, 64, 128}, Case{8, 2, 64, 137}, Case{2, 2, 64, 9}}) {
    CAPTURE(c.n_ctx);
    CAPTURE(c.head_dim);
    Data ymm(c, 13);
    const std::vector<float> want = ymm.attend(c.n_ctx, 64, 2);
    for (const auto& chunk_threads_ : {std::pair<int64_t, int>{1, 1}, {64, 2}, {c.n_ctx, 3}}) {
      const auto& chunk = std::get<0>(chunk_threads_);
      const auto& threads = std::get<1>(chunk_threads_);
      CAPTURE(chunk);
      CAPTURE(threads);
      Data e(c, 13, jit::IsaPath::Avx512);
      const std::vector<float> got = e.attend(c.n_ctx, chunk, threads);
      CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)) == 0);
    }
  }
}

TEST_CASE("tiled attention: under an empty Isa (the portable f16 twins) the same bits as the x86 copies") {
  // The tile is JIT code of the path; the Isa picks the copies of the f16 conversions: the queries'
  // rounding here and the cache's writes (jit::hand_isa, HandOp::f16_rows).
  const topo::Isa x86 = jit::runtime_isa();
  if (jit::hand_isa(jit::HandOp::f16_rows, x86) != jit::HandIsa::avx2) CKJIT_SKIP("AVX2 + FMA + F16C not usable here: no x86 copy to compare");
  REQUIRE(jit::hand_isa(jit::HandOp::f16_rows, topo::Isa{}) == jit::HandIsa::portable);
  std::vector<jit::IsaPath> paths{jit::IsaPath::Avx2};
  if (jit::isa_runs(jit::IsaPath::Avx512, x86)) paths.push_back(jit::IsaPath::Avx512);
  for (jit::IsaPath path : paths)
    for (const Case& c : {Case{4, 2, 64, 170}, Case{6, 2, 128, 45}, Case{8, 2, 64, 137}, Case{2, 2, 64, 9}}) {
      CAPTURE(jit::isa_name(path));
      CAPTURE(c.n_ctx);
      CAPTURE(c.head_dim);
      for (const auto& chunk_threads_ : {std::pair<int64_t, int>{1, 1}, {64, 2}, {c.n_ctx, 3}}) {
        const auto& chunk = std::get<0>(chunk_threads_);
        const auto& threads = std::get<1>(chunk_threads_);
        CAPTURE(chunk);
        CAPTURE(threads);
        Data a(c, 17, path, x86), b(c, 17, path, topo::Isa{});
        const std::vector<float> x = a.attend(c.n_ctx, chunk, threads), p = b.attend(c.n_ctx, chunk, threads);
        CHECK(std::memcmp(x.data(), p.data(), x.size() * sizeof(float)) == 0);
      }
    }
}

TEST_CASE("tiled attention: a batched prompt equals token-by-token evaluation bit for bit (JIT order)") {
  tinymodel::Spec s;
  s.seed = 41;
  gguf::GgufFile f = gguf::GgufFile::from_bytes(tinymodel::bytes(s), "tiny.gguf");
  Workers pool(2);
  ModelOptions jit_order;
  jit_order.linear.llama_decode_order = false;  // GEMM and GEMV share a float order
  SessionOptions o;
  o.n_ctx = 48;
  o.attention = AttentionOrder::tiled;
  test::TextEval batched(f, jit_order, o, pool), serial(f, jit_order, o, pool);
  const int n = 20;
  const int64_t V = batched.hparams().n_vocab;
  std::vector<int32_t> toks(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) toks[size_t(i)] = int32_t((i * 37 + 11) % V);
  std::vector<float> all(static_cast<size_t>(n * V));
  batched.eval(toks, all.data());
  for (int i = 0; i < n; ++i) {
    const float* lg = serial.eval(std::span(toks).subspan(size_t(i), 1));
    CAPTURE(i);
    CHECK(std::memcmp(lg, all.data() + int64_t(i) * V, size_t(V) * sizeof(float)) == 0);
  }
  // --llama-order is llama.cpp's row attention: it cannot be combined with the tiled one.
  ModelOptions llama;
  llama.linear.llama_prefill_order = true;
  CHECK_THROWS_AS(test::TextEval(f, llama, o, pool), Error);
}

}  // TEST_SUITE

TEST_CASE("tile softmax: four rows at once in 16 lanes (the AVX-512 tile) give the 8-lane step's bits per row" * doctest::test_suite("jit")) {
  if (!jit::isa_runs(jit::IsaPath::Avx512, jit::runtime_isa())) CKJIT_SKIP("the avx512 path cannot run here");
  std::mt19937 g(5);
  std::normal_distribution<float> d(0.0f, 30.0f);
  const float ninf = -std::numeric_limits<float>::infinity();
  int compared = 0;
  for (int64_t nk : {16, 48, 128})
    for (int shift = 0; shift < 4; ++shift) {
      // Four rows with different masks and running states, rotated so each row meets each case.
      const int64_t valids[4] = {0, 1, nk / 2 + 3, nk};
      const float m0s[4] = {ninf, 0.0f, 55.0f, -7.0f};
      constexpr int64_t ld = 136;
      std::vector<float> s(size_t(4 * ld));
      for (auto& v : s) v = d(g);
      std::vector<float> a = s, b = s;
      int64_t valid[4];
      float ma[4], la[4], mb[4], lb[4], alpha_a[4], alpha_b[4];
      for (int r = 0; r < 4; ++r) {
        valid[r] = std::min(valids[(r + shift) % 4], nk);
        ma[r] = mb[r] = m0s[(r + shift) % 4];
        la[r] = lb[r] = ma[r] == ninf ? 0.0f : 3.5f;
        alpha_a[r] = jit::softmax_step(a.data() + r * ld, nk, valid[r], 0.125f, ma[r], la[r]);
      }
      jit::softmax_rows16<4>(b.data(), ld, nk, valid, 0.125f, mb, lb, alpha_b);
      CAPTURE(nk);
      CAPTURE(shift);
      CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);  // the columns past nk stay as they were too
      CHECK(std::memcmp(alpha_a, alpha_b, sizeof alpha_a) == 0);
      CHECK(std::memcmp(ma, mb, sizeof ma) == 0);
      CHECK(std::memcmp(la, lb, sizeof la) == 0);
      ++compared;
    }
  CHECK(compared == 12);
}

TEST_CASE("tile softmax: the portable twin gives the AVX2 step's bits (masks / running states / extreme scores)" * doctest::test_suite("jit")) {
  if (!jit::isa_runs(jit::IsaPath::Avx2, jit::runtime_isa())) CKJIT_SKIP("the avx2 path cannot run here");
  std::mt19937 g(11);
  const float ninf = -std::numeric_limits<float>::infinity();
  int compared = 0, differing_from_first = 0;
  for (float spread : {0.5f, 30.0f, 400.0f})  // 400: scaled scores past the exp's +-88 clamps
    for (int64_t nk : {8, 24, 128})
      for (int64_t valid : {int64_t(0), int64_t(1), nk / 2 + 1, nk})
        for (float m0 : {ninf, 0.0f, 55.0f, -7.0f}) {
          std::normal_distribution<float> d(0.0f, spread);
          std::vector<float> a(size_t(nk + 8));
          for (auto& v : a) v = d(g);
          std::vector<float> b = a;
          float ma = m0, mb = m0, la = m0 == ninf ? 0.0f : 3.5f, lb = la;
          const float alpha_a = jit::softmax_step(a.data(), nk, valid, 0.125f, ma, la);
          const float alpha_b = jit::twin::softmax_step(b.data(), nk, valid, 0.125f, mb, lb);
          CAPTURE(spread);
          CAPTURE(nk);
          CAPTURE(valid);
          CAPTURE(m0);
          CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
          CHECK(std::memcmp(&alpha_a, &alpha_b, 4) == 0);
          CHECK(std::memcmp(&ma, &mb, 4) == 0);
          CHECK(std::memcmp(&la, &lb, 4) == 0);
          differing_from_first += la != 0.0f && la != 1.0f;  // the sums are not trivial
          ++compared;
        }
  CHECK(compared == 144);
  CHECK(differing_from_first > 100);
}
