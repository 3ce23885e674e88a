// BatchedDecoder: decode steps of several sessions in one pass. A sequence's logits must be
// byte-identical whether it decodes alone (Session::decode of one row) or in a step with others —
// any number of them, at any position in the step — for every weight-type mix, attention order,
// ISA cap and thread count (the brief's batch invariance). Teacher-forced: the same forced ids for
// the alone and the batched runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "graph/batched_decode.h"
#include "graph/session.h"
#include "graph/text_model.h"
#include "jit/isa_select.h"
#include "runtime/error.h"
#include "tiny_qwen3vl.h"

using namespace ckjit;
using namespace ckjit::graph;

namespace {

gguf::GgufFile make_file(const tinymodel::Spec& s) {
  return gguf::GgufFile::from_bytes(tinymodel::bytes(s), "tiny.gguf");
}

std::vector<int32_t> prompt_of(int i) {
  std::vector<int32_t> p;
  for (int j = 0; j < 3 + 5 * i; ++j) p.push_back(int32_t((37 * i + 11 * j + 5) % 500));
  return p;
}
int32_t forced(int seq, int step) { return int32_t((13 * seq + 29 * step + 7) % 500); }

std::string bytes_of(const float* row, int64_t n) { return std::string(reinterpret_cast<const char*>(row), size_t(n) * 4); }

// The logits of `steps` forced decode steps of sequence i, decoded alone.
std::vector<std::string> alone(const TextModel& m, const SessionOptions& so, Workers& pool, int i, int steps) {
  Session s(m, so, pool);
  s.decode(Batch::text(prompt_of(i), 0));
  std::vector<std::string> out;
  for (int t = 0; t < steps; ++t) {
    Batch b;
    b.add_token(forced(i, t), Position::text(s.next_position()), true);
    const Logits lg = s.decode(b);
    out.push_back(bytes_of(lg.last(), lg.n_vocab));
  }
  return out;
}

struct Mix {
  const char* name;
  tinymodel::Spec spec;
};

std::vector<Mix> mixes() {
  std::vector<Mix> v;
  v.push_back({"Q4_K with Q6_K v/down and a tied Q6_K output", tinymodel::Spec{}});
  tinymodel::Spec b;
  b.wtype = TensorType::Q8_0, b.v_type = TensorType::Q5_K, b.out_type = TensorType::Q8_0, b.tied = false;
  v.push_back({"Q8_0 with Q5_K v/down and an untied Q8_0 output", b});
  return v;
}

}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("batched decode: each sequence's logits are byte-identical alone and in steps of 1 / 3 and 8 at any position") {
  const topo::Isa cpu = jit::runtime_isa();  // the CPU under CKJIT_MAX_ISA
  std::vector<std::string> caps;
  for (jit::IsaPath p : {jit::IsaPath::Avx2, jit::IsaPath::Avx512, jit::IsaPath::Amx})
    if (jit::isa_runs(p, cpu)) caps.push_back(jit::isa_name(p));
  const int n_seq = 8, steps = 5;
  for (const Mix& mix : mixes()) {
    const gguf::GgufFile f = make_file(mix.spec);
    for (const std::string& cap : caps)
      for (int threads : {1, 2})
        for (const char* mode : {"tiled attention", "llama attention", "--llama-order"}) {
          const std::string what = std::string(mix.name) + ", cap " + cap + ", " + std::to_string(threads) + " threads, " + mode;
          CAPTURE(what);
          const AttentionOrder order = std::string(mode) == "tiled attention" ? AttentionOrder::tiled : AttentionOrder::llama;
          Workers pool(threads);
          ModelOptions o;
          o.linear.isa = topo::cap_isa(cpu, cap);
          o.linear.llama_prefill_order = std::string(mode) == "--llama-order";
          const TextModel m(f, o, pool);
          SessionOptions so;
          so.n_ctx = 96, so.attention = order;
          std::vector<std::vector<std::string>> want;
          for (int i = 0; i < n_seq; ++i) want.push_back(alone(m, so, pool, i, steps));

          std::vector<std::unique_ptr<Session>> ss;
          for (int i = 0; i < n_seq; ++i) {
            ss.push_back(std::make_unique<Session>(m, so, pool));
            ss.back()->decode(Batch::text(prompt_of(i), 0));
          }
          BatchedDecoder dec(m, n_seq, ss[0]->attention_scratch_per_worker(), pool);
          // Step t: a different group each time (all 8 in rotated order, 3 of them, one alone), so
          // every sequence runs in several step sizes and positions; each still takes its steps in order.
          std::vector<int> done(n_seq, 0);
          int mismatches = 0, rows = 0;
          for (int round = 0; round < 4 * steps && *std::min_element(done.begin(), done.end()) < steps; ++round) {
            std::vector<int> group;
            if (round % 3 == 0) for (int j = 0; j < n_seq; ++j) group.push_back((j + round) % n_seq);
            else if (round % 3 == 1) group = {round % n_seq, (round + 3) % n_seq, (round + 5) % n_seq};
            else group = {round % n_seq};
            std::vector<Session*> sp;
            std::vector<int32_t> tok;
            for (int i : group)
              if (done[size_t(i)] < steps) sp.push_back(ss[size_t(i)].get()), tok.push_back(forced(i, done[size_t(i)]));
            if (sp.empty()) continue;
            const Logits lg = dec.step(sp, tok);
            REQUIRE(lg.rows == int64_t(sp.size()));
            size_t r = 0;
            for (int i : group) {
              if (done[size_t(i)] >= steps) continue;
              ++rows;
              mismatches += bytes_of(lg.row(int64_t(r++)), lg.n_vocab) != want[size_t(i)][size_t(done[size_t(i)]++)];
            }
          }
          CHECK(rows == n_seq * steps);
          CHECK(mismatches == 0);
        }
  }
}

TEST_CASE("batched decode: bad steps are refused before anything runs") {
  const gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(1);
  const TextModel m(f, ModelOptions{}, pool);
  SessionOptions so;
  so.n_ctx = 8;
  Session a(m, so, pool), b(m, so, pool);
  a.decode(Batch::text(prompt_of(0), 0));  // 3 rows
  b.decode(Batch::text(std::vector<int32_t>(8, 5), 0));  // full
  BatchedDecoder dec(m, 2, a.attention_scratch_per_worker(), pool);
  std::vector<Session*> two{&a, &a}, full{&a, &b}, three{&a, &a, &a};
  std::vector<int32_t> t2{1, 2}, t3{1, 2, 3};
  CHECK_THROWS_WITH_AS(dec.step(two, t2), doctest::Contains("listed twice"), Error);
  CHECK_THROWS_WITH_AS(dec.step(full, t2), doctest::Contains("context full"), Error);
  CHECK(a.n_past() == 3);  // nothing ran
  CHECK_THROWS_WITH_AS(dec.step(three, t3), doctest::Contains("exceed"), Error);
  std::vector<Session*> one{&a};
  std::vector<int32_t> bad{1 << 20};
  CHECK_THROWS_WITH_AS(dec.step(one, bad), doctest::Contains("outside the vocabulary"), Error);
  CHECK_THROWS_WITH_AS(dec.step(one, t2), doctest::Contains("tokens"), Error);
}

}  // TEST_SUITE

// Decode rows of several sequences run what one row runs where that is llama.cpp's vec_dot order
// (Q6_K, Q8_0 in the default order): the report names that for them, and the batch kernel for a
// batch of as many prompt rows.
TEST_CASE("op descriptions name llama.cpp's vec_dot order for the decode rows of several sequences of a Q6_K weight" * doctest::test_suite("decoder")) {
  tinymodel::Spec s;
  s.v_type = TensorType::Q6_K;
  const gguf::GgufFile f = make_file(s);
  Workers pool(1);
  const TextModel m(f, ModelOptions{}, pool);
  const TextModel::Layer& L = m.layers()[0];
  const OpDesc* v = L.wv->op_desc();
  const OpDesc* q = L.wq->op_desc();
  CAPTURE(v->kernel_row);
  CHECK(v->kernel_row.find("vec_dot_q6_K_q8_K") != std::string::npos);
  CHECK(v->kernel(8, true) == v->kernel_row);
  CHECK(v->kernel(40, true) == v->kernel_row);
  CHECK(v->kernel(8).find("jit gemm") != std::string::npos);  // 8 prompt rows: the GEMM
  CHECK(q->kernel(8, true) == q->kernel(8));                  // Q4_K: decode rows run the batch kernels
}

// The report names the kernel each row count runs: one row (decode), 2-16 rows (decode steps of
// several sequences: prefetching fixed blocks where AVX-512 runs) and a prefill chunk.
TEST_CASE("op descriptions name the kernels of one row and few rows and a prefill chunk" * doctest::test_suite("decoder")) {
  const gguf::GgufFile f = make_file(tinymodel::Spec{});
  Workers pool(1);
  ModelOptions o;
  o.linear.llama_decode_order = false;
  const TextModel m(f, o, pool);
  const TextModel::Layer& L = m.layers()[0];
  for (const OpDesc* d : {L.wq->op_desc(), L.down->op_desc(), &L.gate_up_desc}) {
    CAPTURE(d->kernel_rows);
    CHECK(d->kernel(1) == d->kernel_row);
    CHECK(d->kernel(17) == d->kernel_rows);
    if (jit::isa_runs(jit::IsaPath::Avx512, o.linear.isa)) {
      CHECK(d->few_rows == 16);
      CHECK(d->kernel(8).find("isa=avx512") != std::string::npos);
      CHECK(d->kernel(8).find("pf=8") != std::string::npos);
      CHECK(d->kernel(16) == d->kernel(2));
    } else {
      CHECK(d->few_rows == 0);
      CHECK(d->kernel(8) == d->kernel_rows);
    }
  }
}
