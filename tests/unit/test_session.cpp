// The model / session / batch layer: one immutable TextModel shared by sessions, batches of token or
// embedding rows with their own positions and deepstack slices, and the ISA choice of every weight.
#include <doctest/doctest.h>

#include "tests/unit/sanitizers.h"

#include <malloc.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <thread>

#include "graph/layer_ops.h"
#include "graph/session.h"
#include "graph/text_model.h"
#include "jit/isa_select.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"
#include "skip.h"
#include "tiny_qwen3vl.h"

using namespace ckjit;
using namespace ckjit::graph;

namespace {

gguf::GgufFile make_file(const tinymodel::Spec& s) {
  return gguf::GgufFile::from_bytes(tinymodel::bytes(s), "tiny.gguf");
}

std::vector<int32_t> greedy(Session& s, std::vector<int32_t> prompt, int n) {
  std::vector<int32_t> out;
  Logits lg = s.decode(Batch::text(prompt, s.next_position()));
  for (int i = 0; i < n; ++i) {
    const float* row = lg.last();
    int32_t best = 0;
    for (int64_t v = 1; v < lg.n_vocab; ++v)
      if (row[v] > row[best]) best = int32_t(v);
    out.push_back(best);
    Batch b;
    b.add_token(best, Position::text(s.next_position()), true);
    lg = s.decode(b);
  }
  return out;
}

std::vector<float> copy_last(const Logits& lg) { return std::vector<float>(lg.last(), lg.last() + lg.n_vocab); }

// A CPU that reports everything up to AMX (granted): what the load-time choice does on a Sapphire
// Rapids; nothing is executed, only selected and generated.
topo::Isa simulated_amx() {
  topo::Isa i;
  i.sse42 = i.avx = i.avx2 = i.fma = i.f16c = true;
  i.avx512f = i.avx512bw = i.avx512vl = i.avx512dq = i.avx512vnni = i.avx512bf16 = true;
  i.amx_tile = i.amx_int8 = i.amx_bf16 = i.amx_usable = true;
  return i;
}

}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("isa order: amx / avx512 / avxvnni / avx2 filtered by what the CPU runs - below AVX2 is an error") {
  CHECK(jit::isa_paths(simulated_amx()) ==
        std::vector<jit::IsaPath>{jit::IsaPath::Amx, jit::IsaPath::Avx512, jit::IsaPath::Avx2});
  topo::Isa avx2 = topo::cap_isa(simulated_amx(), "avx2");
  CHECK(jit::isa_paths(avx2) == std::vector<jit::IsaPath>{jit::IsaPath::Avx2});
  topo::Isa none;
  CHECK_THROWS_WITH_AS(jit::isa_paths(none), doctest::Contains("AVX2"), Error);
}

TEST_CASE("every weight of every type gets a JIT kernel under every cap this CPU runs and on a simulated AMX CPU") {
  const topo::Isa cpu = topo::detect_isa();
  std::vector<std::pair<std::string, topo::Isa>> isas = {{"simulated amx", simulated_amx()}};
  for (const char* cap : {"avx2", "avxvnni", "avx512", "amx"}) isas.push_back({std::string("cap ") + cap, topo::cap_isa(cpu, cap)});
  for (int mix = 0; mix < 3; ++mix) {
    tinymodel::Spec s;
    if (mix == 1) s.wtype = TensorType::Q8_0, s.v_type = TensorType::Q5_K;
    if (mix == 2) s.wtype = TensorType::Q5_K, s.up_type = TensorType::Q4_K, s.out_type = TensorType::Q8_0, s.tied = false;
    gguf::GgufFile f = make_file(s);
    for (const auto& what_isa_ : isas) {
      const auto& what = std::get<0>(what_isa_);
      const auto& isa = std::get<1>(what_isa_);
      CAPTURE(mix);
      CAPTURE(what);
      Workers pool(1);
      ModelOptions o;
      o.linear.isa = isa;
      TextModel m(f, o, pool);
      CHECK_FALSE(m.uses_reference());
      // The planner's path: AMX tiles only where a tuned profile chose them, so AVX-512 on AMX CPUs
      // (planner.cpp make_context).
      const jit::IsaPath first = jit::isa_paths(isa).front();
      const std::string best = jit::isa_name(first == jit::IsaPath::Amx ? jit::IsaPath::Avx512 : first);
      for (const auto& line : m.dtype_report()) {
        CAPTURE(line);
        CHECK(line.find("scalar reference") == std::string::npos);
        const bool vec_dot_rows = line.find("every row in llama.cpp's") != std::string::npos;  // the LM head (Q6_K, Q8_0)
        if (line.find(" x Q8_") != std::string::npos && !vec_dot_rows) CHECK(line.find("jit gemm " + best) != std::string::npos);
        if (first == jit::IsaPath::Amx && line.find("; gemv ") != std::string::npos) CHECK(line.find("gemv avx512") != std::string::npos);
      }
    }
  }
}

TEST_CASE("--no-jit runs the scalar reference / and the model says so") {
  gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(1);
  ModelOptions o;
  o.linear.allow_jit = false;
  TextModel m(f, o, pool);
  CHECK(m.uses_reference());
}

TEST_CASE("a context too large for this machine's memory is refused before the KV cache is allocated") {
  gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(1);
  const TextModel m(f, ModelOptions{}, pool);
  SessionOptions so;
  so.n_ctx = int64_t(1) << 40;  // petabytes of KV cache
  CHECK_THROWS_WITH_AS(Session(m, so, pool), doctest::Contains("not enough memory for this context"), Error);
  so.n_ctx = 64;
  Session ok(m, so, pool);
  CHECK(ok.kv_bytes() > 0);
}

TEST_CASE("the memory check's figure is the arena and KV cache the session then allocates") {
  gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(2);
  const TextModel m(f, ModelOptions{}, pool);
  const Hparams& hp = m.hparams();
  SessionOptions so;
  so.n_ctx = 100;  // not a multiple of 8: the panel layout pads, the row layout does not
  so.n_ubatch = 16;
  const AttentionShape shape{hp.n_head, hp.n_head_kv, hp.head_dim, 1.0f / std::sqrt(float(hp.head_dim))};
  for (AttentionOrder order : {AttentionOrder::tiled, AttentionOrder::llama}) {
    CAPTURE(int(order));
    so.attention = order;
    Session s(m, so, pool);
    const bool tiled = order == AttentionOrder::tiled;
    const SessionBytes b = session_bytes(m, so.n_ctx, tiled ? KvLayout::panels : KvLayout::rows, so.n_ubatch, pool.size(),
                                         tiled ? TiledAttention::scratch_floats(shape) : attention_scratch_floats(hp.head_dim, so.n_ctx));
    CHECK(b.kv == double(s.kv_bytes()));
    CHECK(b.activations == double(s.arena_bytes() + sizeof(float) * size_t(hp.n_vocab)));
  }
  const KvCache panels(hp.n_layer, so.n_ctx, hp.n_head_kv, hp.head_dim, KvLayout::panels, 8, jit::runtime_isa());
  CHECK(KvCache::bytes_for(hp.n_layer, so.n_ctx, hp.n_head_kv, hp.head_dim, KvLayout::panels) == double(panels.bytes()));
}

TEST_CASE("two sessions on one model in two threads give the same tokens as one after the other") {
  tinymodel::Spec s;
  s.seed = 41;
  s.weight_scale = 0.2f;
  gguf::GgufFile f = make_file(s);
  Workers load(2);
  const TextModel model(f, ModelOptions{}, load);
  const std::vector<int32_t> pa = {5, 17, 300, 42, 9, 77, 128}, pb = {400, 3, 3, 12};
  SessionOptions so;
  so.n_ctx = 64;
  std::vector<int32_t> want_a, want_b;
  {
    Workers w(2);
    Session a(model, so, w);
    want_a = greedy(a, pa, 24);
    Session b(model, so, w);
    want_b = greedy(b, pb, 24);
  }
  std::vector<int32_t> got_a, got_b;
  std::thread ta([&] {
    Workers w(1);
    Session a(model, so, w);
    got_a = greedy(a, pa, 24);
  });
  std::thread tb([&] {
    Workers w(2);
    Session b(model, so, w);
    got_b = greedy(b, pb, 24);
  });
  ta.join();
  tb.join();
  CHECK(got_a == want_a);
  CHECK(got_b == want_b);
  CHECK(want_a != want_b);
}

TEST_CASE("an embedding row equal to a token's embedding gives that token's logits bit for bit") {
  gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(2);
  const TextModel model(f, ModelOptions{}, pool);
  const gguf::TensorInfo& te = model.token_embd();
  const int64_t E = model.hparams().n_embd;
  const std::vector<int32_t> ids = {11, 22, 33, 44, 55};
  std::vector<float> rows(size_t(E) * ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    quant::dequantize_row(te.type.type, te.data + ids[i] * int64_t(te.row_bytes()), rows.data() + i * size_t(E), E);
  Session a(model, SessionOptions{64, 512}, pool), b(model, SessionOptions{64, 512}, pool);
  const std::vector<float> want = copy_last(a.decode(Batch::text(ids, 0)));
  Batch mixed;  // text and embedding rows in one batch
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i % 2) mixed.add_embedding(rows.data() + i * size_t(E), Position::text(int64_t(i)), nullptr, i + 1 == ids.size());
    else mixed.add_token(ids[i], Position::text(int64_t(i)), i + 1 == ids.size());
  }
  const std::vector<float> got = copy_last(b.decode(mixed));
  CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(float)) == 0);
}

TEST_CASE("positions are data: the same rows at other positions change the logits / the KV slot does not") {
  gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(2);
  const TextModel model(f, ModelOptions{}, pool);
  const std::vector<int32_t> ids = {7, 8, 9, 10};
  Session a(model, SessionOptions{64, 512}, pool), b(model, SessionOptions{64, 512}, pool);
  const std::vector<float> at0 = copy_last(a.decode(Batch::text(ids, 0)));
  const std::vector<float> at5 = copy_last(b.decode(Batch::text(ids, 5)));
  CHECK(std::memcmp(at0.data(), at5.data(), at0.size() * sizeof(float)) != 0);
  CHECK(b.n_past() == 4);
  CHECK(b.next_position() == 9);
  // Image-like rows: t fixed, h/w over a 2 x 3 grid from p0 = 4; text resumes at p0 + max(nx, ny).
  Session c(model, SessionOptions{64, 512}, pool);
  c.decode(Batch::text(std::vector<int32_t>{1, 2, 3, 4}, 0, false));
  Batch img;
  for (int i = 0; i < 6; ++i) img.add_token(100 + i, Position{4, 4 + i / 3, 4 + i % 3, 0});
  c.decode(img);
  CHECK(c.next_position() == 4 + 3);
  CHECK(c.n_past() == 10);
}

TEST_CASE("deepstack slices are added after the first layers at the rows that carry them") {
  tinymodel::Spec s;
  s.n_deepstack = 2;
  gguf::GgufFile f = make_file(s);
  Workers pool(2);
  const TextModel model(f, ModelOptions{}, pool);
  REQUIRE(model.hparams().n_deepstack == 2);
  const int64_t E = model.hparams().n_embd;
  std::vector<float> zeros(size_t(2 * E), 0.0f), ds(size_t(2 * E));
  for (size_t i = 0; i < ds.size(); ++i) ds[i] = 0.05f * float(int(i % 7) - 3);
  const std::vector<int32_t> ids = {3, 4, 5};
  auto run = [&](const float* slices) {
    Session se(model, SessionOptions{64, 512}, pool);
    Batch b;
    for (size_t i = 0; i < ids.size(); ++i) b.add_token(ids[i], Position::text(int64_t(i)), i + 1 == ids.size());
    b.deepstack[1] = slices;
    return copy_last(se.decode(b));
  };
  const std::vector<float> plain = run(nullptr), zero = run(zeros.data()), some = run(ds.data());
  CHECK(std::memcmp(plain.data(), zero.data(), plain.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(plain.data(), some.data(), plain.size() * sizeof(float)) != 0);

  gguf::GgufFile nods = make_file(tinymodel::Spec{});
  const TextModel m2(nods, ModelOptions{}, pool);
  Session se(m2, SessionOptions{64, 512}, pool);
  Batch b;
  b.add_token(1, Position::text(0), true);
  b.deepstack[0] = ds.data();
  CHECK_THROWS_WITH_AS(se.decode(b), doctest::Contains("no deepstack layers"), Error);
}

TEST_CASE("bad batches are errors: empty / full context / no token and no embedding") {
  gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(1);
  const TextModel model(f, ModelOptions{}, pool);
  Session se(model, SessionOptions{4, 512}, pool);
  CHECK_THROWS_WITH_AS(se.decode(Batch{}), doctest::Contains("empty batch"), Error);
  Batch b;
  b.add_embedding(nullptr, Position::text(0));
  CHECK_THROWS_WITH_AS(se.decode(b), doctest::Contains("neither a token id nor an embedding"), Error);
  CHECK_THROWS_WITH_AS(se.decode(Batch::text(std::vector<int32_t>{1, 2, 3, 4, 5}, 0)), doctest::Contains("context length 4"), Error);
}

}  // TEST_SUITE

TEST_CASE("the load memory estimate matches what loading the text model takes from the heap" * doctest::test_suite("decoder")) {
#if CKJIT_TEST_ASAN
  CKJIT_SKIP("ASan's allocator does not report heap use through mallinfo2");
#endif
  // Weights large enough to dominate the model's small tables; the untied output is repacked, the
  // embedding read in place.
  tinymodel::Spec spec;
  spec.n_embd = 512, spec.n_ff = 1536, spec.n_layer = 4, spec.n_vocab = 2048, spec.tied = false;
  gguf::GgufFile f = make_file(spec);
  Workers pool(1);
  const double estimate = TextModel::load_bytes(f);
  const auto heap = [] {
    const struct mallinfo2 mi = mallinfo2();
    return double(mi.uordblks) + double(mi.hblkhd);
  };
  const double before = heap();
  auto m = std::make_unique<TextModel>(f, ModelOptions{}, pool);
  const double taken = heap() - before;
  INFO("estimate " << estimate << " bytes, heap growth " << taken << " bytes");
  CHECK(estimate >= 0.9 * taken - 65536.0);  // not an under-estimate (the check must not pass a load that cannot fit)
  CHECK(estimate <= 1.5 * taken);            // nor far above (it must not refuse a load that fits)
  double embd = double(f.tensor("token_embd.weight").n_bytes);
  spec.tied = true;
  gguf::GgufFile tied = make_file(spec);
  CHECK(TextModel::load_bytes(tied) == doctest::Approx(estimate - double(f.tensor("output.weight").n_bytes) + embd));
}
