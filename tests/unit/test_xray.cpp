// The tap (runtime/tap.h) and ckjit xray (xray/): checkpoints published under their names with
// their rows, costing nothing off; a clean run against ckjit's scalar twins shows no divergence; an
// injected kernel fault (CKJIT_TEST_FAULT, test-only) is named with its op and the replay blames
// the op; a replay further down blames upstream drift; a llama.cpp dump of another model, prompt
// or image is refused; unknown checkpoint names give a clear message.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/checkpoints.h"
#include "runtime/error.h"
#include "runtime/tap.h"
#include "tests/unit/cli_run.h"
#include "tests/unit/skip.h"
#include "tests/unit/text_eval.h"
#include "tests/unit/tiny_qwen3vl.h"
#include "xray/llama_dump.h"
#include "xray/xray.h"
#include "tests/unit/process_temp_dir.h"
#include "tests/unit/synth_cache.h"

namespace fs = std::filesystem;
using namespace ckjit;

namespace {

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

struct Files {
  fs::path dir, model, mmproj;
};

const Files& files() {
  static Files f = [] {
    Files x;
    x.dir = ckjit::test::process_temp_dir("ckjit_xray_");
    fs::create_directories(x.dir);
    synth_into("--preset tiny --seed 5 --name x", x.dir);
    x.model = x.dir / "x-Q4_K_M.gguf", x.mmproj = x.dir / "mmproj-x-f16.gguf";
    return x;
  }();
  return f;
}

xray::XrayOptions text_options() {
  xray::XrayOptions o;
  o.run.model = files().model.string();
  o.run.prompt.text = "The quick brown fox jumps over the lazy dog";
  o.run.threads = 2;
  o.run.n_ctx = 128;
  o.n_predict = 4;
  return o;
}

// CKJIT_TEST_FAULT for the weights loaded while it lives.
struct FaultScope {
  explicit FaultScope(const char* weight) { setenv("CKJIT_TEST_FAULT", weight, 1); }
  ~FaultScope() { unsetenv("CKJIT_TEST_FAULT"); }
};

void write_index(const fs::path& dir, const std::string& records, size_t floats) {
  fs::create_directories(dir);
  std::ofstream(dir / "index.json") << "[" << records << "]";
  std::vector<float> zeros(floats, 0.5f);
  std::ofstream(dir / "text.bin", std::ios::binary).write(reinterpret_cast<const char*>(zeros.data()), long(floats * 4));
}

}  // namespace

TEST_SUITE("xray") {

TEST_CASE("tap: names - rows and widths as published - the filter keeps names and rows - an override replaces rows in place") {
  Tap tap(TapFilter{"L0\\..*", 1, 3});
  std::vector<float> a = {1, 2, 3, 4, 5, 6, 7, 8};  // 4 rows of 2
  tap.publish("L0.q", a.data(), 4, 2, 2, 0);
  tap.publish("L1.q", a.data(), 4, 2, 2, 0);
  REQUIRE(tap.records().size() == 1);
  const TapRecord& r = tap.records()[0];
  CHECK(r.name == "L0.q");
  CHECK(r.cols == 2);
  CHECK(r.rows == std::vector<int64_t>{1, 2});
  CHECK(r.data == std::vector<float>{3, 4, 5, 6});
  CHECK(r.find_row(2) == 1);
  CHECK(r.find_row(0) == -1);
  // A second chunk appends its rows at their positions.
  std::vector<float> b = {9, 10};
  tap.publish("L0.q", b.data(), 1, 2, 2, 0, std::vector<int64_t>{2}.data());
  CHECK(tap.records()[0].rows.size() == 3);

  Tap replay(TapFilter{".*"});
  replay.set_override(TapRecord{"L0.k", 2, {1}, {-1, -2}});
  std::vector<float> c = {1, 2, 3, 4};
  replay.publish("L0.k", c.data(), 2, 2, 2, 0);
  CHECK(c == std::vector<float>{1, 2, -1, -2});
  CHECK(replay.overrides_applied() == 1);
  CHECK(replay.find("L0.k")->data == c);
  CHECK_THROWS_WITH_AS(Tap(TapFilter{"L0.(q"}), doctest::Contains("not a valid regular expression"), Error);
}

TEST_CASE("tap: a tapped run gives the same logits bit for bit (its split row pass included) and holds every layer's checkpoints") {
  tinymodel::Spec spec;
  spec.seed = 41;
  gguf::GgufFile f = gguf::GgufFile::from_bytes(tinymodel::bytes(spec), "tiny.gguf");
  Workers pool(2);
  graph::SessionOptions so;
  so.n_ctx = 32;
  so.n_ubatch = 4;  // several chunks
  const std::vector<int32_t> toks = {5, 9, 100, 7, 300, 2, 11, 64, 3};
  test::TextEval plain(f, {}, so, pool), tapped(f, {}, so, pool);
  Tap tap;
  tapped.session.set_tap(&tap);
  const int64_t V = plain.hparams().n_vocab;
  std::vector<float> a(size_t(V) * toks.size()), b(a.size());
  plain.eval(toks, a.data());
  tapped.eval(toks, b.data());
  CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
  const graph::Hparams& hp = plain.hparams();
  const auto names = checkpoint_names(hp.n_layer, hp.n_deepstack, 0);
  REQUIRE(tap.records().size() == names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    CHECK(tap.records()[i].name == names[i]);
    CHECK(tap.records()[i].rows.size() == toks.size());
  }
  CHECK(tap.find("L0.q")->cols == hp.q_width());
  CHECK(tap.find("L0.ffn_act")->cols == hp.n_ff);
  CHECK(std::memcmp(tap.find("logits")->data.data(), b.data(), b.size() * 4) == 0);
}

TEST_CASE("compare: exact tolerance - llama.cpp's envelope oriented like the candidate and no envelope means not compared") {
  const TapRecord ref{"L0.q", 2, {0, 1}, {1, 0, 0, 2}};
  const TapRecord near{"L0.q", 2, {0, 1}, {1.001f, 0, 0, 2}};
  const TapRecord far{"L0.q", 2, {0, 1}, {1.1f, 0, 0, 2}};
  xray::Tolerances exact;
  exact.exact = true;
  auto one = [](const std::vector<TapRecord>& c, const std::vector<TapRecord>& r, const xray::Tolerances& t) {
    const auto v = xray::compare_runs(c, r, t);
    REQUIRE(v.size() == 1);
    return v[0];
  };
  CHECK(one({ref}, {ref}, exact).verdict == xray::Verdict::passed);
  CHECK(one({near}, {ref}, exact).verdict == xray::Verdict::failed);
  CHECK(one({near}, {}, exact).verdict == xray::Verdict::not_compared);
  xray::Tolerances env;
  env.envelope_a = {ref}, env.envelope_b = {near};  // the reference run and llama.cpp's other run
  const auto same_as_other = one({near}, {ref}, env);
  CHECK(same_as_other.verdict == xray::Verdict::passed);  // exactly the other run's distance: inside
  CHECK(same_as_other.tolerance == doctest::Approx(0.001));
  CHECK(same_as_other.other_identical);
  CHECK(one({far}, {ref}, env).verdict == xray::Verdict::failed);
  CHECK(one({far}, {ref}, xray::Tolerances{}).verdict == xray::Verdict::not_compared);  // no envelope: no guess
  // Rows are matched by position; a row only one run holds is not compared.
  const TapRecord late{"L0.q", 2, {1, 7}, {0, 2, 5, 5}};
  const auto d = xray::distance(late, ref);
  CHECK(d.rows == 1);
  CHECK(d.identical);
  // The first ranking disagreement: step and rank.
  const TapRecord la{"logits", 3, {4, 5}, {1, 2, 3, 3, 2, 1}}, lb{"logits", 3, {4, 5}, {1, 2, 3, 3, 1, 2}};
  const auto k = xray::first_ranking_disagreement(la, lb);
  CHECK(k.step == 1);
  CHECK(k.position == 5);
  CHECK(k.k == 2);
  CHECK(k.top1_candidate == 0);
}

TEST_CASE("checkpoints: every name has its op - unknown names have none") {
  const auto names = checkpoint_names(2, 1, 1);
  CHECK(names.front() == "V.patch_embd");
  CHECK(names.back() == "logits");
  for (const auto& n : names) CHECK_MESSAGE(!checkpoint_op(n).empty(), n);
  CHECK(checkpoint_op("L1.nope").empty());
  CHECK(checkpoint_op("Lx.q").empty());
  CHECK_THROWS_WITH_AS(xray::check_checkpoint_filter("L99\\.q", checkpoint_names(2, 0, 0)),
                       doctest::Contains("matches no checkpoint"), Error);
}

TEST_CASE("xray vs the scalar twins: a clean run shows no divergence - bit for bit at every checkpoint") {
  const xray::XrayReport r = xray::run_xray(text_options());
  CHECK_FALSE(r.diverged());
  CHECK_FALSE(r.replay.ran);
  CHECK(r.ranking.steps_compared == 4);
  CHECK(r.ranking.step == -1);
    REQUIRE(r.checkpoints.size() == checkpoint_names(4, 3, 0).size());  // the tiny preset: 4 layers, 3 deepstack
  for (const auto& c : r.checkpoints) {
    CHECK_MESSAGE(c.verdict == xray::Verdict::passed, c.name);
    CHECK(c.bit_identical);
  }
}

TEST_CASE("xray vs the scalar twins: an injected kernel fault is named with its op and its replay fails") {
  FaultScope fault("blk.1.attn_k.weight");
  const xray::XrayReport r = xray::run_xray(text_options());
  REQUIRE(r.first_failing);
  CHECK(r.checkpoints[*r.first_failing].name == "L1.k");
  REQUIRE(r.last_passing);
  CHECK(r.checkpoints[*r.last_passing].name == "L1.q");
  CHECK(r.replay.ran);
  CHECK(r.replay.checkpoint == "L1.k");
  CHECK(r.replay.weight == "blk.1.attn_k.weight");
  CHECK(r.replay.result.verdict == xray::Verdict::failed);
  CHECK(r.replay.conclusion.find("kernel, layout or ABI fault") != std::string::npos);
  CHECK(r.replay.overrides > 0);
}

TEST_CASE("xray replay further down: on the reference's inputs the op agrees - so the drift came from upstream") {
  FaultScope fault("blk.0.ffn_down.weight");
  xray::XrayOptions o = text_options();
  o.replay = "L2.ffn_act";
  const xray::XrayReport r = xray::run_xray(o);
  REQUIRE(r.first_failing);
  CHECK(r.checkpoints[*r.first_failing].name == "L0.l_out");
  CHECK(r.replay.result.verdict == xray::Verdict::passed);
  CHECK(r.replay.result.bit_identical);
  CHECK(r.replay.conclusion.find("upstream") != std::string::npos);
}

TEST_CASE("xray with an image: the vision tower's checkpoints and the bridge rows are compared too") {
  xray::XrayOptions o = text_options();
  o.run.mmproj = files().mmproj.string();
  o.run.image = (fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / "square-64.png").string();
  o.run.prompt.text = "Read";
  o.n_predict = 2;
  const xray::XrayReport r = xray::run_xray(o);
  CHECK_FALSE(r.diverged());
  bool merger = false, block = false;
  for (const auto& c : r.checkpoints) {
    merger = merger || (c.name == "V.merger" && c.verdict == xray::Verdict::passed);
    block = block || (c.name == "V0.block_out" && c.verdict == xray::Verdict::passed);
  }
  CHECK(merger);
  CHECK(block);
}

TEST_CASE("xray: a llama.cpp dump of another model - prompt or image is refused with a clear message") {
  xray::DumpShape s;
  s.n_layer = 2, s.n_embd = 8, s.q_width = 8, s.kv_width = 4, s.n_ff = 16, s.n_vocab = 32, s.n_rows = 3;
  const fs::path dir = files().dir / "fake-dump";
  // attn_norm-0 of width 16: another model's n_embd.
  write_index(dir, R"({"seq":0,"graph":"text","name":"attn_norm-0","type":"f32","ne":[16,3,1,1],"offset":0,"bytes":192})", 48);
  CHECK_THROWS_WITH_AS(xray::read_llama_dump(dir.string(), s), doctest::Contains("does not belong to this run"), Error);
  // The right width but 5 rows: another prompt.
  write_index(dir,
              R"({"seq":0,"graph":"text","name":"attn_norm-0","type":"f32","ne":[8,5,1,1],"offset":0,"bytes":160},)"
              R"({"seq":1,"graph":"text","name":"attn_norm-1","type":"f32","ne":[8,5,1,1],"offset":160,"bytes":160})",
              80);
  CHECK_THROWS_WITH_AS(xray::read_llama_dump(dir.string(), s), doctest::Contains("covers 5 rows, this trajectory 3"), Error);
  // Three layers for a model of two.
  s.n_rows = 5;
  write_index(dir,
              R"({"seq":0,"graph":"text","name":"attn_norm-0","type":"f32","ne":[8,5,1,1],"offset":0,"bytes":160},)"
              R"({"seq":1,"graph":"text","name":"attn_norm-2","type":"f32","ne":[8,5,1,1],"offset":160,"bytes":160})",
              80);
  CHECK_THROWS_WITH_AS(xray::read_llama_dump(dir.string(), s), doctest::Contains("3 layers, this model 2"), Error);
  // A dump that fits is read, with rows at their positions.
  write_index(dir,
              R"({"seq":0,"graph":"text","name":"attn_norm-0","type":"f32","ne":[8,5,1,1],"offset":0,"bytes":160},)"
              R"({"seq":1,"graph":"text","name":"l_out-1","type":"f32","ne":[8,1,1,1],"offset":160,"bytes":32})",
              48);
  const auto recs = xray::read_llama_dump(dir.string(), s);
  REQUIRE(recs.size() == 2);
  CHECK(recs[1].name == "L1.l_out");
  CHECK(recs[1].rows == std::vector<int64_t>{4});  // the ubatch's output row
  CHECK_THROWS_WITH_AS(xray::read_llama_dump((files().dir / "no-such").string(), s), doctest::Contains("no index.json"), Error);
  // Hostile indexes: a negative extent, an offset past the data, not JSON.
  write_index(dir, R"({"seq":0,"graph":"text","name":"attn_norm-0","type":"f32","ne":[8,-5,1,1],"offset":0,"bytes":-160})", 8);
  CHECK_THROWS_WITH_AS(xray::read_llama_dump(dir.string(), s), doctest::Contains("out of range"), Error);
  write_index(dir, R"({"seq":0,"graph":"text","name":"attn_norm-0","type":"f32","ne":[8,5,1,1],"offset":4000,"bytes":160})", 8);
  CHECK_THROWS_WITH_AS(xray::read_llama_dump(dir.string(), s), doctest::Contains("shorter than its index.json"), Error);
  std::ofstream(dir / "index.json") << "[{\"seq\":";
  CHECK_THROWS_AS(xray::read_llama_dump(dir.string(), s), Error);
  // Projector rows of another image size.
  s.v_layers = 1, s.v_patches = 16, s.proj_dim = 8, s.n_deepstack = 1;
  std::ofstream(files().dir / "embd.f32", std::ios::binary) << std::string(100, '\0');
  CHECK_THROWS_WITH_AS(xray::read_llama_embd((files().dir / "embd.f32").string(), s), doctest::Contains("another model or image"), Error);
}

TEST_CASE("ckjit xray CLI: a verdict line - --json for machines - clear errors for unknown checkpoints and missing peers") {
  const Files& f = files();
  const std::string base = "xray -m " + q(f.model) + " -p 'Hello there' -n 2 -t 2 -c 64";
  CliResult r = run_ckjit(base);
  CHECK(r.status == 0);
  CHECK(r.output.find("verdict: no divergence") != std::string::npos);
  r = run_ckjit(base + " --json", "CKJIT_TEST_FAULT=blk.0.attn_q.weight");
  CHECK(r.status == 0);
  CHECK(r.output.find("\"diverged\":true") != std::string::npos);
  CHECK(r.output.find("\"name\":\"L0.q\",\"verdict\":\"failed\"") != std::string::npos);
  r = run_ckjit(base + " --replay L0.nope");
  CHECK(r.status != 0);
  CHECK(r.output.find("no such checkpoint") != std::string::npos);
  r = run_ckjit(base + " --checkpoints 'Q[0-9]'");
  CHECK(r.status != 0);
  CHECK(r.output.find("matches no checkpoint") != std::string::npos);
  r = run_ckjit(base + " --rows 0:2 --json");  // the prompt is 2 tokens + 1 forced step: 3 rows
  CHECK(r.status == 0);
  CHECK(r.output.find("\"rows\":2,") != std::string::npos);  // each checkpoint compared on rows 0 and 1 only
  r = run_ckjit(base + " --rows 4");
  CHECK(r.status != 0);
  CHECK(r.output.find("expected A:B") != std::string::npos);
  r = run_ckjit(base + " --rows 3:3");
  CHECK(r.status != 0);
  CHECK(r.output.find("selects no rows") != std::string::npos);
  r = run_ckjit(base + " --reference llama", "CKJIT_PEER_CLI=");
  CHECK(r.status != 0);
  CHECK(r.output.find("peer-cli") != std::string::npos);
  r = run_ckjit(base + " --reference llama --llama-dump " + q(f.dir / "no-such-dump"));
  CHECK(r.status != 0);
  CHECK(r.output.find("no index.json") != std::string::npos);
}

TEST_CASE("xray vs a recorded llama.cpp dump: with --llama-order every checkpoint is llama.cpp's one-token bits and none leaves its envelope") {
  // tests/fixtures/xray/make_fixture.sh: peer-cli's dumps of this test's model, prompt and greedy
  // trajectory (AVX-512 llama.cpp; ckjit's bits are the same on every machine), logits left out.
  const fs::path dump = fs::path(CKJIT_FIXTURES_DIR) / "xray" / "llama-dump";
  xray::XrayOptions o = text_options();
  o.reference = "llama";
  o.run.llama_order = true;
  o.run.attention = graph::AttentionOrder::llama;
  o.llama_dump = (dump / "batched").string();
  o.llama_dump_serial = (dump / "serial").string();
  const xray::XrayReport r = xray::run_xray(o);
  int judged = 0;
  for (const auto& c : r.checkpoints) {
    CAPTURE(c.name);
    if (c.name == "embd" || c.name == "logits") CHECK(c.verdict == xray::Verdict::not_compared);  // not in the dump
    if (c.verdict == xray::Verdict::not_compared) continue;
    ++judged;
    CHECK(c.verdict == xray::Verdict::passed);
    REQUIRE(c.other_distance.has_value());
    CHECK(c.other_identical);  // llama.cpp's one-token-per-batch run, bit for bit
    // 9 prompt rows + 3 forced steps; the last layer past its attention holds the 4 output rows
    // only (llama.cpp computes no more there).
    CHECK((c.rows == 12 || c.rows == 4));
  }
  CHECK(judged == 56);  // 4 layers x 14, embd and logits not compared
  CHECK(!r.first_failing.has_value());
  // The default order parts from llama.cpp's where its own order differs (perf/XRAY.md): judged
  // against the same dump, the first checkpoint past the envelope is named and replayed.
  o.run.llama_order = false;
  o.run.attention = graph::AttentionOrder::tiled;
  const xray::XrayReport d = xray::run_xray(o);
  REQUIRE(d.first_failing.has_value());
  MESSAGE("default order against llama.cpp: first failing " << d.checkpoints[*d.first_failing].name << "; replay: " << d.replay.conclusion);
  CHECK(d.replay.ran);
}

TEST_CASE("xray vs llama.cpp (peer-cli): every checkpoint is judged against llama.cpp's own envelope") {
  const char* peer = std::getenv("CKJIT_PEER_CLI");
  if (!peer || !*peer || access(peer, X_OK) != 0) CKJIT_SKIP("CKJIT_PEER_CLI (llama.cpp's peer-cli) is not set here");
  xray::XrayOptions o = text_options();
  o.reference = "llama";
  o.peer_cli = peer;
  const xray::XrayReport r = xray::run_xray(o);
  int judged = 0;
  for (const auto& c : r.checkpoints) {
    if (c.name == "embd") CHECK(c.verdict == xray::Verdict::not_compared);
    if (c.verdict == xray::Verdict::not_compared) continue;
    ++judged;
    CHECK(c.rows > 0);
    CHECK(c.tolerance >= 0);
  }
  CHECK(judged > 50);
  CHECK(r.ranking.steps_compared == 4);
}

}  // TEST_SUITE
