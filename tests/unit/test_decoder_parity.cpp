// Decoder parity with llama.cpp on synthesized models, judged by llama.cpp's own float-order envelope.
// The fixtures (tests/fixtures/decoder/*.json, recorded by make_fixtures.sh with peer-cli) hold only
// llama.cpp's numbers; the model is re-synthesized here with `ckjit synth` (deterministic). Each
// fixture has one forced trajectory and a list of peer runs on it, one per peer ISA class (avx512,
// avxvnni, avx2): the token-by-token logits (prompt fed -b 1 -ub 1, "tbt") at the run's top-K ids
// and, in "envelope" runs, the batched-prompt logits (default -b/-ub) at the same ids.
//
// Why an envelope and not a fixed tolerance: llama.cpp's own logits move with its ISA and with its
// prompt batching (other GEMM / quantizer float orders); on sharp models (logit std ~10) those last
// bits grow along the 128 steps to O(1e-1..1). A fixed tolerance against one build's dump is then
// right on one machine and wrong on the next. Instead, per envelope run R:
//   envelope  E_R = max over steps s and stored ids i of |batched_R(s,i) - tbt_R(s,i)|: how far
//             llama.cpp moves when only its float orders change (same model, same trajectory);
//   distance  D_R = max over s, i of |ckjit(s,i) - tbt_R(s,i)|, ckjit's default `run --force`;
//   spread    S(s) = llama.cpp's own float-order spread at step s, over the fixture's runs: each
//             envelope run's |batched - tbt| and each pair of ISA runs' |tbt_A - tbt_B| (another
//             ISA is another float order too), max over the stored ids; S*(s) = max over s' <= s
//             (a difference at step s' stays in the KV cache every later step reads). Per step it
//             is erratic: 0 where llama.cpp's two orders happen to coincide (its batched and
//             token-by-token prompts run the same kernels for some tensor types), so the running
//             max and the ISA pairs, not one run's batched gap alone, say what a float order moves.
//   check     at every step s: D_R(s) <= tol_R(s) = kFactor * min(E_R, S*(s)) + kFloor. ckjit's
//             distance comes from float orders of the same kind (blocked dot products, batched
//             prefill GEMM, quantizer rows, fused SwiGLU) and should be of the same size as
//             llama.cpp's spread, not smaller: a factor of 4 leaves room for where the orders
//             differ, while a real bug (wrong RoPE, a mis-read block, a wrong norm) sits orders of
//             magnitude above. kFloor covers the 6-decimal storage (each stored value is within
//             5e-7) when a spread is (near) zero. Measured on the six fixtures (Zen 5): the worst
//             step is at 0.81 of its tolerance.
//   top-1     at every step where R's tbt top-2 margin exceeds 2 * tol_R(s), ckjit's argmax over
//             the full vocabulary is R's tbt top-1: within the allowed distance no other id could
//             overtake it.
// --llama-order (ckjit reproduces llama.cpp's AVX-512 token-by-token orders; ckjit's arithmetic is
// meant to be identical on every ISA): on every machine, its logits equal the avx512 runs' tbt
// logits to the 6 stored decimals (kBitTolerance).
// Greedy text (sharp models): ckjit's free-running greedy tokens equal llama.cpp's along the prefix
// where llama.cpp's top-2 margin is wide relative to the envelope (> kGreedyMarginFactor times the
// largest per-step envelope so far, and > kGreedyMinMargin); past it a float-order change may
// legitimately pick another token and the texts need not agree. Along that prefix the greedy
// tokens are the forced ones, so the logits are those already checked above: what greedy text adds
// is the free-running loop (sampling, feeding back its own tokens). The prefix must be at least
// kMinGreedyPrefix = 16 tokens for that to mean anything. Greedy-text tests use models whose top-2
// margins are wide enough to be robust to float order, not the sharpness knob alone (it scales
// every logit alike): the chain models (kWideMarginCases, `ckjit synth --chain`: next token =
// perm(current), margin ~sqrt(E) x the logit spread) must reach kMinGreedyPrefix; the other sharp
// models (sharpness 10, margins ~1-2 against a step-0 envelope of 0.3-0.8) only report theirs.
// A check that cannot run (no envelope run in a fixture) fails; a test case with nothing to check
// at all prints the skip marker (tests/unit/skip.h), which ctest reports as skipped.
#include <doctest/doctest.h>

#include "skip.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>
#include <unistd.h>

#include "cli_run.h"
#include "peer_fixture.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/json.h"
#include "runtime/logits_compare.h"
#include "runtime/tokenizer/gguf_vocab.h"
#include "runtime/tokenizer/tokenizer.h"

namespace fs = std::filesystem;
using namespace ckjit;

namespace {

using peer_fixture::fmt;
using peer_fixture::ints;
using peer_fixture::join;

constexpr float kFactor = 4.0f;
constexpr float kFloor = 1e-5f;
constexpr float kBitTolerance = 2e-6f;
constexpr float kGreedyMarginFactor = 50.0f;
constexpr float kGreedyMinMargin = 0.05f;
constexpr size_t kMinGreedyPrefix = 16;

const char* const kCases[] = {"tiny-s1", "tiny-s2", "tiny-s3", "headdim128-untied", "mixed-q5k-q80", "chain-s6"};
// Cases whose top-2 margins are wide by construction: their greedy text must have a clear-margin
// prefix of at least kMinGreedyPrefix tokens.
const char* const kWideMarginCases[] = {"chain-s6"};

bool wide_margin(const std::string& name) {
  return std::find(std::begin(kWideMarginCases), std::end(kWideMarginCases), name) != std::end(kWideMarginCases);
}


// This machine's ISA class, by the rule make_fixtures.sh uses for the peer machine.
std::string isa_class() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream fl(line.substr(line.find(':') + 1));
    std::vector<std::string> f;
    for (std::string w; fl >> w;) f.push_back(w);
    auto has = [&](const char* w) { return std::find(f.begin(), f.end(), w) != f.end(); };
    if (has("avx512f") && has("avx512bw") && has("avx512vl")) return "avx512";
    if (has("avx_vnni")) return "avxvnni";
    if (has("avx2")) return "avx2";
    return "other";
  }
  return "other";
}

struct PeerRun {
  std::string isa;
  std::vector<std::vector<int32_t>> ids;             // [step][k], the tbt run's top-K, descending
  std::vector<std::vector<float>> tbt, batched;      // logits at ids; batched empty: no envelope
  std::vector<float> full_max_abs;                   // envelope runs: batched vs tbt, whole vocabulary
  std::vector<double> full_cos;
  std::vector<int32_t> batched_top1;
  bool envelope() const { return !batched.empty(); }
  int32_t top1(size_t s) const { return ids[s][0]; }
  float margin(size_t s) const { return tbt[s].size() > 1 ? tbt[s][0] - tbt[s][1] : INFINITY; }
  float step_envelope(size_t s) const {
    float e = 0;
    for (size_t i = 0; i < ids[s].size(); ++i) e = std::max(e, std::fabs(batched[s][i] - tbt[s][i]));
    return e;
  }
  float max_envelope(size_t* at) const {
    float e = 0;
    for (size_t s = 0; s < ids.size(); ++s)
      if (const float x = step_envelope(s); x > e) e = x, *at = s;
    return e;
  }
};

struct Fixture {
  std::string name, prompt;
  std::vector<std::string> synth;
  bool sharp = false;
  std::vector<int32_t> prompt_tokens, forced;
  std::vector<PeerRun> runs;
};

Fixture load_fixture(const std::string& name) {
  const JsonValue doc = parse_json_file((fs::path(CKJIT_FIXTURES_DIR) / "decoder" / (name + ".json")).string());
  Fixture f;
  f.name = doc.at("name").as_string();
  f.prompt = doc.at("prompt").as_string();
  for (const auto& a : doc.at("synth").as_array()) f.synth.push_back(a.as_string());
  f.sharp = doc.at("sharp").as_bool();
  f.prompt_tokens = ints(doc.at("prompt_tokens"));
  f.forced = ints(doc.at("forced"));
  for (const auto& r : doc.at("runs").as_array()) {
    PeerRun p;
    p.isa = r.at("isa").as_string();
    peer_fixture::read_top(r.at("tbt_top"), p.ids, p.tbt);
    REQUIRE_MESSAGE(p.ids.size() == f.forced.size(), name << " [" << p.isa << "]: tbt_top is not one row per forced step");
    if (const auto b = r.find("batched")) {
      for (const auto& step : b->as_array()) {
        p.batched.emplace_back();
        for (const auto& v : step.as_array()) p.batched.back().push_back(float(v.as_number()));
        REQUIRE(p.batched.back().size() == p.ids[p.batched.size() - 1].size());
      }
      REQUIRE(p.batched.size() == p.ids.size());
      for (const auto& v : r.at("full_max_abs").as_array()) p.full_max_abs.push_back(float(v.as_number()));
      for (const auto& v : r.at("full_cos").as_array()) p.full_cos.push_back(v.as_number());
      p.batched_top1 = ints(r.at("batched_top1"));
    }
    f.runs.push_back(std::move(p));
  }
  return f;
}

// A synthesized model in a temporary directory (removed with the object).
struct Model {
  fs::path dir, path;
  int64_t n_vocab = 0;
  explicit Model(const Fixture& f) {
    dir = fs::temp_directory_path() / ("ckjit_parity_" + std::to_string(getpid()) + "_" + f.name);
    fs::create_directories(dir);
    std::string synth = "synth -q --name m --out '" + dir.string() + "'";
    for (const auto& a : f.synth) synth += " " + a;
    const CliResult r = run_ckjit(synth);
    REQUIRE_MESSAGE(r.status == 0, f.name << ": ckjit synth failed: " << r.output);
    for (const auto& e : fs::directory_iterator(dir))
      if (e.path().filename().string().rfind("m-", 0) == 0) path = e.path();
    REQUIRE_MESSAGE(!path.empty(), f.name << ": ckjit synth wrote no model");
    gguf::GgufFile g = gguf::GgufFile::open(path.string());
    n_vocab = int64_t(g.tensor("token_embd.weight").ne[1]);
  }
  ~Model() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
  // ckjit's teacher-forced logits, [steps][n_vocab].
  std::vector<float> forced_logits(const Fixture& f, const std::string& extra) const {
    const fs::path ids = dir / "forced.txt", dump = dir / "ck.f32";
    std::ofstream(ids) << join(f.forced);
    const CliResult r = run_ckjit("run -m '" + path.string() + "' -p '" + f.prompt + "' --force '" + ids.string() +
                                  "' --dump-logits '" + dump.string() + "'" + extra);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    std::vector<float> lg = read_logits_file(dump.string(), n_vocab);
    REQUIRE(int64_t(lg.size()) == int64_t(f.forced.size()) * n_vocab);
    return lg;
  }
};

struct Distance {
  float max = 0;
  size_t step = 0;
  int32_t id = 0;
};
// max over steps and R's stored ids of |ckjit - R.tbt|
Distance distance(const std::vector<float>& lg, int64_t V, const PeerRun& r) {
  Distance d;
  for (size_t s = 0; s < r.ids.size(); ++s)
    for (size_t i = 0; i < r.ids[s].size(); ++i) {
      const float x = std::fabs(lg[s * size_t(V) + size_t(r.ids[s][i])] - r.tbt[s][i]);
      if (x > d.max) d = {x, s, r.ids[s][i]};
    }
  return d;
}

// |ckjit - R.tbt| at step s, max over R's stored ids (and the id where it is largest).
std::pair<float, int32_t> step_distance(const std::vector<float>& lg, int64_t V, const PeerRun& r, size_t s) {
  std::pair<float, int32_t> d{0.0f, 0};
  for (size_t i = 0; i < r.ids[s].size(); ++i) {
    const float x = std::fabs(lg[s * size_t(V) + size_t(r.ids[s][i])] - r.tbt[s][i]);
    if (x > d.first) d = {x, r.ids[s][i]};
  }
  return d;
}



// Tokenization, and ckjit's teacher-forced logits against every envelope run.
void check_case(const std::string& name) {
  CAPTURE(name);
  const Fixture f = load_fixture(name);
  const Model m(f);
  gguf::GgufFile g = gguf::GgufFile::open(m.path.string());
  tok::Tokenizer tk(tok::vocab_from_gguf(g));
  CHECK(tk.encode(f.prompt, true, true) == f.prompt_tokens);

  const std::vector<float> lg = m.forced_logits(f, "");
  const int64_t V = m.n_vocab;
  const std::vector<float> spread = peer_fixture::spread_so_far(f.runs, f.forced.size());
  int envelope_runs = 0;
  for (const PeerRun& r : f.runs) {
    // A run without batched logits has no envelope of its own: the spread alone bounds it.
    envelope_runs += r.envelope();
    size_t e_at = 0;
    const float E = r.envelope() ? r.max_envelope(&e_at) : INFINITY;
    // Every step against its own tolerance; the worst step (largest share of its tolerance) is reported.
    float worst_ratio = 0, worst_d = 0, worst_tol = 0, d0 = 0;
    size_t worst_step = 0;
    int32_t worst_id = 0;
    int clear = 0, agree = 0, peer_agree = 0, over = 0;
    std::string flips;
    for (size_t s = 0; s < r.ids.size(); ++s) {
      const float tol = kFactor * std::min(E, spread[s]) + kFloor;
      const auto [d, id] = step_distance(lg, V, r, s);
      if (s == 0) d0 = d;
      if (d / tol > worst_ratio) worst_ratio = d / tol, worst_d = d, worst_tol = tol, worst_step = s, worst_id = id;
      over += d > tol;
      if (r.envelope()) peer_agree += r.batched_top1[s] == r.top1(s);
      if (r.margin(s) <= 2 * tol) continue;
      ++clear;
      const int32_t got = step_top(std::span(lg).subspan(s * size_t(V), size_t(V))).top1;
      if (got == r.top1(s)) ++agree;
      else flips += " step " + std::to_string(s) + ": " + std::to_string(got) + " for " + std::to_string(r.top1(s)) + ";";
    }
    std::ostringstream env;
    if (r.envelope())
      env << "envelope (llama.cpp batched vs token-by-token, top-" << r.ids[0].size() << " ids) max " << fmt(E)
          << " at step " << e_at << ", full-vocab max |diff| " << fmt(*std::max_element(r.full_max_abs.begin(), r.full_max_abs.end()))
          << ", cos min " << fmt(*std::min_element(r.full_cos.begin(), r.full_cos.end()), 10)
          << ", llama.cpp top-1 batched=tbt " << peer_agree << "/" << r.ids.size();
    else
      env << "no envelope of its own (token-by-token only): the spread bounds it";
    MESSAGE(name << " [" << r.isa << " run]: " << env.str() << " | ckjit default vs tbt, each step against "
                 << kFactor << " x min(envelope, spread so far) + " << kFloor << ": worst step " << worst_step << " (id "
                 << worst_id << ") " << fmt(worst_d) << " of " << fmt(worst_tol) << " allowed (" << fmt(worst_ratio, 3)
                 << "); top-1 " << agree << "/" << clear << " where the margin is over twice the step's tolerance"
                 << " | step 0 (the prompt): envelope " << (r.envelope() ? fmt(r.step_envelope(0)) : "-") << ", spread " << fmt(spread[0])
                 << ", ckjit " << fmt(d0));
    CHECK_MESSAGE(over == 0, name << ": at " << over << " steps ckjit's teacher-forced logits are further from llama.cpp's "
                                  << r.isa << " token-by-token logits than that step's tolerance; the worst, step " << worst_step
                                  << " (id " << worst_id << "): " << fmt(worst_d) << " > " << fmt(worst_tol) << " = " << kFactor
                                  << " x min(envelope " << fmt(E) << ", spread so far " << fmt(spread[worst_step]) << ") + " << kFloor);
    CHECK_MESSAGE(agree == clear, name << ": ckjit's top-1 differs from llama.cpp's " << r.isa
                                       << " where the margin is clear:" << flips);
  }
  REQUIRE_MESSAGE(envelope_runs > 0, name << ": the fixture has no run with envelope data (batched + token-by-token); "
                                             "run tests/fixtures/decoder/make_fixtures.sh on a machine with peer-cli");
}

// Greedy text on a sharp model, along llama.cpp's clear-margin prefix.
void check_greedy(const std::string& name) {
  CAPTURE(name);
  const Fixture f = load_fixture(name);
  REQUIRE_MESSAGE(f.sharp, name << " is not a sharp model: its greedy text is not compared");
  // llama.cpp's tokens: the run of this machine's ISA class if recorded, else the avx512 run. Along
  // the prefix where that run's token-by-token top-1 is the forced token, its free-running greedy
  // text (-b 1 -ub 1) is the forced trajectory.
  const std::string here = isa_class();
  const PeerRun* pick = nullptr;
  for (const std::string& want : {here, std::string("avx512")})
    for (const PeerRun& r : f.runs)
      if (!pick && r.isa == want) pick = &r;
  if (!pick) pick = &f.runs.front();
  // The envelope at step s: the largest per-step envelope of the envelope runs up to s (a token at
  // step s depends only on the steps before it).
  int envelope_runs = 0;
  for (const PeerRun& r : f.runs) envelope_runs += r.envelope();
  REQUIRE_MESSAGE(envelope_runs > 0, name << ": the fixture has no run with envelope data; run make_fixtures.sh");
  float env = 0, thr = 0;
  size_t prefix = 0;
  for (; prefix < f.forced.size(); ++prefix) {
    for (const PeerRun& r : f.runs)
      if (r.envelope()) env = std::max(env, r.step_envelope(prefix));
    thr = std::max(kGreedyMarginFactor * env, kGreedyMinMargin);
    if (pick->margin(prefix) <= thr || pick->top1(prefix) != f.forced[prefix]) break;
  }
  const std::string why = prefix == f.forced.size()                ? "the end of the trajectory"
                          : pick->top1(prefix) != f.forced[prefix] ? "llama.cpp's top-1 leaving the trajectory"
                                                                   : "margin " + fmt(pick->margin(prefix)) + " <= " + fmt(thr);
  size_t same = 0;
  if (prefix > 0) {
    const Model m(f);
    CliResult gr = run_ckjit("run -m '" + m.path.string() + "' -p '" + f.prompt + "' -n " + std::to_string(prefix) +
                             " --ignore-eos -v");
    REQUIRE_MESSAGE(gr.status == 0, gr.output);
    const auto pos = gr.output.find("generated ids: ");
    REQUIRE(pos != std::string::npos);
    std::istringstream in(gr.output.substr(pos + 15));
    std::vector<int32_t> got;
    for (int32_t x; got.size() < prefix && in >> x;) got.push_back(x);
    while (same < got.size() && got[same] == f.forced[same]) ++same;
  }
  MESSAGE(name << ": greedy text (llama.cpp's " << pick->isa << " run): clear-margin prefix " << prefix << " of "
               << f.forced.size() << " tokens (ended at step " << prefix << " by " << why << "; envelope there "
               << fmt(env) << "), ckjit identical for " << same << " of them");
  if (wide_margin(name)) {
    CHECK_MESSAGE(prefix >= kMinGreedyPrefix,
                  name << ": llama.cpp's clear-margin prefix is only " << prefix << " tokens (< " << kMinGreedyPrefix
                       << ") on a model built for wide margins (--chain): its top-2 margins are not wide relative "
                          "to llama.cpp's own float-order envelope (a finding about the fixture model, not about ckjit)");
  } else if (prefix < kMinGreedyPrefix) {
    MESSAGE(name << ": clear-margin prefix " << prefix << " < " << kMinGreedyPrefix
                 << ", for information: sharpness scales every logit alike, so its margins are not wide relative "
                    "to llama.cpp's float-order envelope (greedy text is checked on the --chain models)");
  }
  CHECK_MESSAGE(same == prefix, name << ": ckjit's greedy text leaves llama.cpp's at token " << same
                                     << " inside the clear-margin prefix of " << prefix);
}

}  // namespace

TEST_SUITE("parity") {
TEST_CASE("decoder parity with llama.cpp: tiny models of several seeds") {
  for (const char* n : {"tiny-s1", "tiny-s2", "tiny-s3"}) check_case(n);
}
TEST_CASE("decoder parity with llama.cpp: head_dim 128 != E/Hq with an untied output") {
  check_case("headdim128-untied");
}
TEST_CASE("decoder parity with llama.cpp: Q5_K and Q8_0 tensors") {
  check_case("mixed-q5k-q80");
}
TEST_CASE("decoder parity with llama.cpp: a chain model (wide top-2 margins by construction)") {
  check_case("chain-s6");
}
TEST_CASE("decoder parity with llama.cpp: greedy text along the clear-margin prefix (sharp models)") {
  for (const char* n : kCases)
    if (load_fixture(n).sharp) check_greedy(n);
}
// ckjit's arithmetic is meant to be the same on every ISA, so this runs on every machine.
TEST_CASE("decoder parity with llama.cpp: --llama-order reproduces AVX-512 llama.cpp token by token") {
  const std::string here = isa_class();
  int checked = 0;
  for (const char* n : kCases) {
    const std::string name = n;  // doctest prints a char* as a pointer
    CAPTURE(name);
    const Fixture f = load_fixture(name);
    const PeerRun* ref = nullptr;
    for (const PeerRun& r : f.runs)
      if (r.isa == "avx512") ref = &r;
    if (!ref) {
      MESSAGE(name << ": no avx512 token-by-token run recorded");
      continue;
    }
    const Model m(f);
    const std::vector<float> lg = m.forced_logits(f, " --llama-order");
    for (const PeerRun& r : f.runs) {
      const Distance d = distance(lg, m.n_vocab, r);
      MESSAGE(name << ": ckjit --llama-order vs llama.cpp " << r.isa << " token-by-token (top-" << r.ids[0].size()
                   << " ids): max |diff| " << fmt(d.max) << " (step " << d.step << ", id " << d.id << ")"
                   << std::string(r.isa == "avx512" ? "" : ", for information"));
    }
    const Distance d = distance(lg, m.n_vocab, *ref);
    ++checked;
    CHECK_MESSAGE(d.max <= kBitTolerance,
                  name << ": ckjit --llama-order on this " << here << " machine is " << fmt(d.max)
                       << " from AVX-512 llama.cpp's token-by-token logits (step " << d.step << ", id " << d.id
                       << "; allowed " << kBitTolerance << ", the 6-decimal storage). --llama-order must give those "
                          "numbers on every ISA; off AVX-512 this fails until ckjit's AVX2 kernels use the AVX-512 float orders.");
  }
  if (checked == 0) ckjit::test::print_skip_marker("no fixture has an avx512 token-by-token run");
}
}
