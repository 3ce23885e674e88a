// Decoder tests: GGUF validation, layer ops against naive references, KV-cache correctness
// (prefill-then-decode logits == prefill-all logits), chunked prefill, JIT vs reference paths.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "graph/rope.h"
#include "jit/isa_select.h"
#include "text_eval.h"
#include "graph/layer_ops.h"
#include "runtime/error.h"
#include "runtime/quants/f16_rows.h"
#include "runtime/quants/quants.h"
#include "tiny_qwen3vl.h"

using namespace ckjit;
using namespace ckjit::graph;
using ckjit::test::TextEval;

namespace {

gguf::GgufFile make_file(const tinymodel::Spec& s) {
  return gguf::GgufFile::from_bytes(tinymodel::bytes(s), "tiny.gguf");
}

std::string load_error(const tinymodel::Spec& s) {
  try {
    gguf::GgufFile f = make_file(s);
    Workers pool(1);
    SessionOptions o;
    o.n_ctx = 64;
    TextEval d(f, ModelOptions{}, o, pool);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
  return ab / std::sqrt(aa * bb);
}

float max_abs_diff(const float* a, const float* b, int64_t n) {
  float m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

std::vector<int32_t> random_tokens(int n, int64_t vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int32_t> t(static_cast<size_t>(n));
  for (auto& x : t) x = int32_t(rng() % uint32_t(vocab));
  return t;
}

}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("hparams: a valid tiny model loads and reports its shape") {
  tinymodel::Spec s;
  gguf::GgufFile f = make_file(s);
  Hparams hp = read_hparams(f);
  CHECK(hp.n_embd == 256);
  CHECK(hp.n_layer == 2);
  CHECK(hp.head_dim == 64);
  CHECK(hp.n_vocab == 512);
  CHECK(hp.tied_output);
  CHECK(hp.rope_sections[0] == 12);
  CHECK(load_error(s) == "");
}

TEST_CASE("hparams: bad files give clear errors") {
  tinymodel::Spec s;
  SUBCASE("another architecture") {
    s.arch = "llama";
    CHECK(load_error(s).find("architecture 'llama' is not supported") != std::string::npos);
  }
  SUBCASE("missing tensor") {
    s.skip_tensors = {"blk.1.ffn_up.weight"};
    CHECK(load_error(s).find("missing tensor 'blk.1.ffn_up.weight'") != std::string::npos);
  }
  SUBCASE("missing untied output is fine, missing norm is not") {
    s.skip_tensors = {"output_norm.weight"};
    CHECK(load_error(s).find("missing tensor 'output_norm.weight'") != std::string::npos);
  }
  SUBCASE("wrong shape") {
    s.reshape["blk.0.attn_k.weight"] = {256, 256};
    CHECK(load_error(s).find("'blk.0.attn_k.weight' has shape [256, 256], expected [256, 128]") != std::string::npos);
  }
  SUBCASE("unsupported weight type") {
    s.wtype = TensorType::F16;
    CHECK(load_error(s).find("which ckjit cannot multiply") != std::string::npos);
  }
  SUBCASE("heads not a multiple of kv heads") {
    s.n_head = 6;  // 6 x 128 = 768 and 4 x 128 = 512 keep whole super-blocks
    s.n_head_kv = 4;
    s.head_dim = 128;
    const std::string e = load_error(s);
    CAPTURE(e);
    CHECK(e.find("not a multiple of head_count_kv") != std::string::npos);
  }
}

TEST_CASE("decoder: context overflow and bad token ids are errors") {
  gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(2);
  SessionOptions o;
  o.n_ctx = 8;
  TextEval d(f, ModelOptions{}, o, pool);
  std::vector<int32_t> nine(9, 1);
  CHECK_THROWS_WITH_AS(d.eval(nine), doctest::Contains("exceed the context length 8"), Error);
  std::vector<int32_t> bad = {1, 512};
  CHECK_THROWS_WITH_AS(d.eval(bad), doctest::Contains("outside the vocabulary"), Error);
}

TEST_CASE("layer ops: rms_norm matches a double-precision reference") {
  std::mt19937 rng(3);
  std::normal_distribution<float> nd;
  std::vector<float> x(300), w(300), y(300);
  for (auto& v : x) v = nd(rng) * 3.0f;
  for (auto& v : w) v = 1.0f + 0.1f * nd(rng);
  rms_norm(x.data(), w.data(), y.data(), 300, 1e-6f);
  double ss = 0;
  for (float v : x) ss += double(v) * v;
  const double inv = 1.0 / std::sqrt(ss / 300 + 1e-6);
  for (int i = 0; i < 300; ++i) CHECK(y[i] == doctest::Approx(x[i] * inv * w[i]).epsilon(1e-6));
}

TEST_CASE("layer ops: rms_norm_vectors gives rms_norm's bits for every vector / in place or not / for 1..9 vectors") {
  std::mt19937 rng(4);
  std::normal_distribution<float> nd;
  const int64_t n = 128, ld = 136;
  std::vector<float> w(static_cast<size_t>(n));
  for (auto& v : w) v = 1.0f + 0.1f * nd(rng);
  for (int64_t count = 1; count <= 9; ++count) {
    std::vector<float> x(static_cast<size_t>(count * ld));
    for (auto& v : x) v = nd(rng) * (count % 2 ? 3.0f : 1e-3f);
    std::vector<float> want(x.size(), 0.0f), got(x.size(), 0.0f), in_place = x;
    for (int64_t v = 0; v < count; ++v) rms_norm(x.data() + v * ld, w.data(), want.data() + v * ld, n, 1e-6f);
    rms_norm_vectors(x.data(), ld, w.data(), got.data(), ld, count, n, 1e-6f);
    rms_norm_vectors(in_place.data(), ld, w.data(), in_place.data(), ld, count, n, 1e-6f);
    CAPTURE(count);
    CHECK(std::memcmp(got.data(), want.data(), got.size() * 4) == 0);
    for (int64_t v = 0; v < count; ++v)
      CHECK(std::memcmp(in_place.data() + v * ld, want.data() + v * ld, size_t(n) * 4) == 0);
  }
}

TEST_CASE("layer ops: interleaved M-RoPE rotates pairs (k / k+64) and leaves llama.cpp's e pairs alone") {
  const int32_t sec[4] = {24, 20, 20, 0};
  Rope rope(128, 5e6f, sec, jit::runtime_isa());
  const int64_t pos = 1000;
  std::vector<float> c(64), s(64);
  rope.angles(Position::text(pos), c.data(), s.data());
  for (int k = 0; k < 64; ++k) {
    if (k == 61 || k == 62) {  // component e (= 0 for text): unrotated
      CHECK(c[k] == 1.0f);
      CHECK(s[k] == 0.0f);
      continue;
    }
    const double theta = pos * std::pow(5e6, -2.0 * k / 128.0);
    CHECK(c[k] == doctest::Approx(std::cos(theta)).epsilon(2e-4));
    CHECK(s[k] == doctest::Approx(std::sin(theta)).epsilon(2e-4));
  }
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[i] = float(i % 17) - 8.0f;
  std::vector<float> y = x;
  rope.apply(y.data(), 2, c.data(), s.data());
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 64; ++k) {
      const float x0 = x[h * 128 + k], x1 = x[h * 128 + k + 64];
      CHECK(y[h * 128 + k] == doctest::Approx(x0 * c[k] - x1 * s[k]));
      CHECK(y[h * 128 + k + 64] == doctest::Approx(x0 * s[k] + x1 * c[k]));
    }
}

TEST_CASE("layer ops: GQA causal attention matches a naive double softmax") {
  const int64_t Hq = 4, Hkv = 2, D = 16, n_ctx = 10, m = 3, pos0 = 4;
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> q(size_t(m * Hq * D)), kf(size_t(n_ctx * Hkv * D)), vf(kf.size());
  for (auto& v : q) v = nd(rng);
  for (auto& v : kf) v = nd(rng);
  for (auto& v : vf) v = nd(rng);
  std::vector<uint16_t> kc(kf.size()), vc(vf.size());
  quant::f32_to_f16_rows(kf.data(), kc.data(), int64_t(kf.size()));
  quant::f32_to_f16_rows(vf.data(), vc.data(), int64_t(vf.size()));
  Workers pool(2);
  const int64_t per_worker = attention_scratch_floats(D, n_ctx);
  std::vector<float> out(q.size()), scratch(static_cast<size_t>(2 * per_worker));
  AttentionShape as{Hq, Hkv, D, 0.25f};
  Attention(jit::runtime_isa()).run(pool, as, q.data(), m, pos0, kc.data(), vc.data(), out.data(), scratch.data(), per_worker);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kvh = h / (Hq / Hkv), n = pos0 + i + 1;
      std::vector<double> p(static_cast<size_t>(n));
      double mx = -1e300, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double d = 0;
        for (int64_t e = 0; e < D; ++e)
          d += double(q[size_t(i * Hq * D + h * D + e)]) * quant::f16_to_f32(kc[size_t(j * Hkv * D + kvh * D + e)]);
        p[size_t(j)] = d * 0.25;
        mx = std::max(mx, p[size_t(j)]);
      }
      for (auto& x : p) sum += (x = std::exp(x - mx));
      for (int64_t e = 0; e < D; ++e) {
        double o = 0;
        for (int64_t j = 0; j < n; ++j) o += p[size_t(j)] / sum * quant::f16_to_f32(vc[size_t(j * Hkv * D + kvh * D + e)]);
        CHECK(out[size_t(i * Hq * D + h * D + e)] == doctest::Approx(o).epsilon(2e-3));
      }
    }
}

TEST_CASE("decoder: prefill-then-decode logits equal prefill-all logits (KV cache)") {
  for (int variant = 0; variant < 4; ++variant) {
    tinymodel::Spec s;
    s.seed = 11 + variant;
    if (variant == 1) {  // head_dim != E / Hq, untied output, more GQA
      s.n_head = 8;
      s.n_head_kv = 2;
      s.head_dim = 64;
      s.tied = false;
      s.embd_type = TensorType::Q4_K;
    }
    if (variant == 2) {  // Q5_K and Q8_0 weights (reference path for Q5_K)
      s.wtype = TensorType::Q8_0;
      s.v_type = TensorType::Q5_K;
    }
    if (variant == 3) {  // gate and up of different types: unfused, two activation formats
      s.wtype = TensorType::Q8_0;
      s.up_type = TensorType::Q4_K;
    }
    CAPTURE(variant);
    gguf::GgufFile f = make_file(s);
    Workers pool(2);
    SessionOptions o;
    o.n_ctx = 64;
    // Same kernels for M > 1 and M = 1 (the JIT GEMM and GEMV share a float order), so the cached
    // path must reproduce the batched one to the last bits.
    ModelOptions jit_order;
    jit_order.linear.llama_decode_order = false;
    TextEval all(f, jit_order, o, pool);
    const int n = 20;
    const int64_t V = all.hparams().n_vocab;
    auto toks = random_tokens(n, V, 7);
    std::vector<float> ref(static_cast<size_t>(n * V));
    all.eval(toks, ref.data());

    SessionOptions o2;
    o2.n_ctx = 64;
    o2.n_ubatch = 5;  // chunked prefill
    TextEval inc(f, jit_order, o2, pool);
    const float* lg = inc.eval(std::span(toks).first(8));
    CHECK(max_abs_diff(lg, ref.data() + 7 * V, V) <= 1e-4f);
    for (int i = 8; i < n; ++i) {
      lg = inc.eval(std::span(toks).subspan(size_t(i), 1));
      CAPTURE(i);
      CHECK(cosine(lg, ref.data() + int64_t(i) * V, V) > 0.999999);
      CHECK(max_abs_diff(lg, ref.data() + int64_t(i) * V, V) <= 1e-4f);
    }
    CHECK(inc.n_past() == n);

    // llama.cpp's decode order differs from the GEMM's in the last bits only.
    SessionOptions o3;
    o3.n_ctx = 64;
    TextEval lo(f, ModelOptions{}, o3, pool);
    lo.eval(std::span(toks).first(8));
    for (int i = 8; i < n; ++i) {
      lg = lo.eval(std::span(toks).subspan(size_t(i), 1));
      CHECK(cosine(lg, ref.data() + int64_t(i) * V, V) > 0.999);
    }
  }
}

TEST_CASE("decoder: JIT kernels agree with the scalar reference path") {
  tinymodel::Spec s;
  s.seed = 21;
  gguf::GgufFile f = make_file(s);
  Workers pool(2);
  SessionOptions o;
  o.n_ctx = 32;
  TextEval jit(f, ModelOptions{}, o, pool);
  ModelOptions no_jit;
  no_jit.linear.allow_jit = false;
  TextEval ref(f, no_jit, o, pool);
  auto toks = random_tokens(9, 512, 3);
  std::vector<float> a(512), b(512);
  const float* la = jit.eval(toks);
  std::copy(la, la + 512, a.begin());
  const float* lb = ref.eval(toks);
  std::copy(lb, lb + 512, b.begin());
  CHECK(cosine(a.data(), b.data(), 512) > 0.99999);
  bool any_jit = false;
  for (auto& line : jit.model.dtype_report()) any_jit = any_jit || line.find("jit") != std::string::npos;
  CHECK(any_jit);
  for (auto& line : ref.model.dtype_report()) CHECK(line.find(": jit") == std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("decoder") {
TEST_CASE("decoder: with llama_prefill_order a batched prompt equals token-by-token evaluation bit for bit") {
  tinymodel::Spec s;
  s.seed = 31;
  s.up_type = TensorType::Q6_K;  // exercise the Q6_K rows and the unfused Gate-Up in prefill
  gguf::GgufFile f = make_file(s);
  Workers pool(2);
  SessionOptions o;
  o.n_ctx = 32;
  o.attention = AttentionOrder::llama;  // llama.cpp's order all the way: its row attention too
  ModelOptions llama;
  llama.linear.llama_prefill_order = true;
  TextEval batched(f, llama, o, pool);
  const int n = 12;
  auto toks = random_tokens(n, 512, 5);
  std::vector<float> all(static_cast<size_t>(n * 512));
  batched.eval(toks, all.data());
  TextEval serial(f, ModelOptions{}, o, pool);
  for (int i = 0; i < n; ++i) {
    const float* lg = serial.eval(std::span(toks).subspan(size_t(i), 1));
    CAPTURE(i);
    CHECK(max_abs_diff(lg, all.data() + int64_t(i) * 512, 512) == 0.0f);
  }
}
}
