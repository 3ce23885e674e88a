// The pair layer (pair/): one ISA target per load, the projector found beside the model, errors in
// the library's terms.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <optional>

#include "jit/hand_kernels.h"
#include "jit/isa_target.h"
#include "jit/planner/jit_runner.h"
#include "jit/planner/model_shapes.h"
#include "jit/planner/profile.h"
#include "jit/planner/tuner.h"
#include "pair/context.h"
#include "pair/model.h"
#include "runtime/synth/qwen3vl_layout.h"
#include "runtime/synth/synth_model.h"
#include "skip.h"
#include "tokenizer_fixture.h"
#include "tools/cli_terms.h"
#include "vision/dense_linear.h"
#include "tests/unit/process_temp_dir.h"

namespace fs = std::filesystem;
using namespace ckjit;

namespace {

// A tiny synthesized pair (text model + mmproj, real tokenizer), written once per test binary into a
// folder of its own that no case writes to (fixture_cache.h); dir: this process's scratch folder.
struct PairFiles {
  fs::path dir;
  std::string model, mmproj;
};

const PairFiles& files() {
  static const PairFiles f = [] {
    PairFiles x;
    x.dir = ckjit::test::process_temp_dir("ckjit_pair_");
    fs::create_directories(x.dir);
    const qwen3vl::ModelDims dims = qwen3vl::preset_dims("tiny");
    synth::SynthOptions o;
    o.seed = 5;
    o.threads = 2;
    o.tokenizer_dir = tokfix::kQwen3Dir;
    const fs::path pair = fixture_cache::file("pair-tiny-seed5", [&](const fs::path& out) { synth::write_qwen3vl_pair(dims, o, out.string()); });
    x.model = (pair / synth::text_file_name(dims.preset, o.text_mix)).string();
    x.mmproj = (pair / synth::mmproj_file_name(dims.preset, o.mmproj_type)).string();
    REQUIRE(fs::exists(x.model));
    REQUIRE(fs::exists(x.mmproj));
    return x;
  }();
  return f;
}

// Sets an environment variable for one scope.
struct EnvScope {
  std::string name;
  std::optional<std::string> old;
  EnvScope(const std::string& n, const std::string& value) : name(n) {
    if (const char* v = std::getenv(n.c_str())) old = v;
    setenv(n.c_str(), value.c_str(), 1);
  }
  ~EnvScope() {
    if (old) setenv(name.c_str(), old->c_str(), 1);
    else unsetenv(name.c_str());
  }
};

const char* cap_name(jit::IsaPath p) {
  switch (p) {
    case jit::IsaPath::Amx: return "amx";
    case jit::IsaPath::Avx512: return "avx512";
    case jit::IsaPath::AvxVnni: return "avxvnni";
    case jit::IsaPath::Avx2: return "avx2";
  }
  return "";
}

// `ckjit tune --model` for the load's machine as the cap sees it (few candidates, one run each):
// the profile a capped load must find and use.
void tune_for(const std::string& model, const topo::Machine& capped) {
  Profile profile;
  profile.machine = MachineIdentity::of(capped);
  std::vector<OpShape> shapes;
  for (const auto& ms : planner::model_op_shapes(gguf::GgufFile::open(model), 512)) shapes.push_back(ms.shape);
  planner::JitRunner runner(1e12, 0, capped.isa);
  planner::TuneOptions to;
  to.repeats = 1, to.warmups = 0, to.max_candidates = 2;
  for (const auto& r : planner::tune(shapes, capped, runner, to, profile)) CHECK_MESSAGE(r.measured, r.shape.key() << ": " << r.skipped_because);
  save_profile(profile, profile_path(profile.machine));
}

// The logits of a forced trajectory through a load capped at `cap`.
std::vector<float> capped_logits(const std::string& cap, std::vector<std::string>* plan_report) {
  pair::LoadOptions lo;
  lo.model_path = files().model;
  lo.threads = 2;
  lo.max_isa = cap;
  const auto model = pair::Model::load(lo);
  if (plan_report) *plan_report = model->text().plan_report();
  pair::Context ctx(model, pair::ContextOptions{});
  pair::Prompt p;
  p.add_text("The page says");
  graph::GenerateOptions go;
  go.forced = {13, 220, 17, 4};
  std::vector<float> all;
  graph::GenerateCallbacks cb;
  cb.on_logits = [&](const float* l, int64_t n) { all.insert(all.end(), l, l + n); };
  ctx.generate(ctx.render(p), go, cb);
  return all;
}

// Under the cap: the load plans for the cap's kernels (the tuned profile of the capped machine is
// found), every planned op runs its plan (no "not used" fallback to fixed blocks), and the logits
// are those of the avx2 floor, bit for bit.
void check_cap(jit::IsaPath path) {
  const fs::path cache = files().dir / ("cache-" + std::string(cap_name(path)));
  EnvScope xdg("XDG_CACHE_HOME", cache.string());
  const jit::IsaTarget target = jit::IsaTarget::resolve(cap_name(path));
  CHECK(target.best() == path);
  tune_for(files().model, target.applied_to(topo::this_machine()));
  std::vector<std::string> report;
  const std::vector<float> logits = capped_logits(cap_name(path), &report);
  REQUIRE(!report.empty());
  for (const std::string& line : report) {
    CAPTURE(line);
    CHECK(line.find("[profile]") != std::string::npos);
    CHECK(line.find("not used") == std::string::npos);
  }
  // The floor: the avx2 cap without any profile (the cost model's plans), not the tuned avx2 load
  // this test may be checking.
  std::vector<float> floor;
  {
    EnvScope untuned("XDG_CACHE_HOME", (files().dir / "cache-untuned").string());
    floor = capped_logits("avx2", nullptr);
  }
  REQUIRE(logits.size() == floor.size());
  CHECK(std::memcmp(logits.data(), floor.data(), logits.size() * sizeof(float)) == 0);
}

bool process_runs(jit::IsaPath p) { return jit::isa_runs(p, jit::runtime_isa()); }

}  // namespace

TEST_SUITE("pair") {

TEST_CASE("pair: capped at avx2 / the tuned plans run and the logits are the floor's") {
  check_cap(jit::IsaPath::Avx2);
}

// Each op's hand-written copies as the load handed them out: Attention's, and per Linear (every
// layer's and the LM head) its Q8_K quantizer, decode dots and swiglu; the vision tower's dense
// repacks. want(op): the name of the copy expected for that op.
void check_hand_copies(const pair::Model& m, const std::function<std::string(jit::HandOp)>& want) {
  CHECK(m.text().attention().impl() == want(jit::HandOp::attention_rows));
  int linears = 0;
  auto linear = [&](const graph::Linear& l) {
    CHECK(l.q8k_impl() == want(jit::HandOp::q8k_quantize));
    CHECK(l.decode_dots_impl() == want(jit::HandOp::decode_dots));
    CHECK(l.swiglu_impl() == want(jit::HandOp::swiglu));
    ++linears;
  };
  for (const auto& L : m.text().layers())
    for (const graph::Linear* l : {L.wq.get(), L.wk.get(), L.wv.get(), L.wo.get(), L.gate.get(), L.up.get(), L.down.get()})
      linear(*l);
  linear(m.text().lm_head());
  CHECK(linears == 7 * int(m.text().layers().size()) + 1);
  REQUIRE(m.vision() != nullptr);
  int dense = 0;
  for (const auto& tensor_op_ : m.vision()->linears_by_tensor()) {
    const auto& tensor = std::get<0>(tensor_op_);
    const auto& op = std::get<1>(tensor_op_);
    if (const auto* d = dynamic_cast<const vision::DenseLinear*>(op)) {
      CAPTURE(tensor);
      CHECK(d->repack_impl() == want(jit::HandOp::dense_panels));
      ++dense;
    }
  }
  CHECK(dense == int(m.vision()->linears_by_tensor().size()));  // f32 precision: every matmul is dense
}

TEST_CASE("pair: a load capped at avx2 hands the avx2 copies of the hand-written kernels to every op") {
  const topo::Isa cpu = jit::runtime_isa();
  if (!(cpu.avx2 && cpu.fma && cpu.f16c)) CKJIT_SKIP("AVX2 + FMA + F16C not usable here");
  pair::LoadOptions lo;
  lo.model_path = files().model;
  lo.mmproj_path = files().mmproj;
  lo.threads = 2;
  lo.use_profile = false;
  lo.max_isa = "avx2";
  {
    const auto capped = pair::Model::load(lo);
    check_hand_copies(*capped, [](jit::HandOp) { return std::string("avx2"); });
  }
  // Uncapped: each op's copy for this process's Isa (the avx512 ones where they run, unless
  // CKJIT_MAX_ISA caps the process), so the cap above is what chose avx2.
  lo.max_isa = "";
  const auto uncapped = pair::Model::load(lo);
  const topo::Isa isa = uncapped->isa().isa;
  check_hand_copies(*uncapped, [&](jit::HandOp op) { return std::string(jit::hand_isa_name(jit::hand_isa(op, isa))); });
  if (jit::hand_isa(jit::HandOp::attention_rows, isa) == jit::HandIsa::avx512)
    CHECK(std::string(uncapped->text().attention().impl()) == "avx512");
}

TEST_CASE("pair: capped at avxvnni / the tuned plans run and the logits are the avx2 floor's") {
  if (!process_runs(jit::IsaPath::AvxVnni) || jit::IsaTarget::resolve("avxvnni").best() != jit::IsaPath::AvxVnni)
    CKJIT_SKIP("AVX-VNNI not usable here (or capped by CKJIT_MAX_ISA)");
  check_cap(jit::IsaPath::AvxVnni);
}

TEST_CASE("pair: capped at avx512 / the tuned plans run and the logits are the avx2 floor's") {
  if (!process_runs(jit::IsaPath::Avx512)) CKJIT_SKIP("AVX-512 VNNI not usable here (or capped by CKJIT_MAX_ISA)");
  check_cap(jit::IsaPath::Avx512);
}

TEST_CASE("pair: capped at amx / the tuned plans run and the logits are the avx2 floor's") {
  if (!process_runs(jit::IsaPath::Amx)) CKJIT_SKIP("AMX not usable here (or capped by CKJIT_MAX_ISA)");
  check_cap(jit::IsaPath::Amx);
}

TEST_CASE("pair: a bad max_isa is an invalid argument named in the library's terms") {
  try {
    jit::IsaTarget::resolve("sse2");
    FAIL("sse2 accepted");
  } catch (const Error& e) {
    CHECK(e.kind() == ErrorKind::invalid_argument);
    CHECK(std::string(e.what()).find("max_isa must be") != std::string::npos);
  }
}

TEST_CASE("pair: without an mmproj path / the one projector beside the model is taken and named") {
  pair::LoadOptions lo;
  lo.model_path = files().model;
  lo.threads = 1;
  lo.want_vision = true;
  const auto m = pair::Model::load(lo);
  REQUIRE(m->vision() != nullptr);
  CHECK(fs::equivalent(m->mmproj_path(), files().mmproj));
  CHECK(m->mmproj_note().find("found beside") != std::string::npos);
}

TEST_CASE("pair: no projector or several beside the model are errors that list what was found") {
  const fs::path dir = files().dir / "search";
  fs::create_directories(dir);
  const fs::path model = dir / "m.gguf";
  fs::copy_file(files().model, model, fs::copy_options::overwrite_existing);
  pair::LoadOptions lo;
  lo.model_path = model.string();
  lo.threads = 1;
  lo.want_vision = true;
  lo.wanted_by = "page.png";
  SUBCASE("none: the error names the image and the folder") {
    try {
      pair::Model::load(lo);
      FAIL("loaded without a projector");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::bad_model);
      CHECK(cli::in_flag_terms(e).find("page.png: an image needs --mmproj") != std::string::npos);
      CHECK(std::string(e.what()).find("no mmproj*.gguf in") != std::string::npos);
    }
  }
  SUBCASE("none is text only when vision is optional") {
    lo.vision_optional = true;
    CHECK(pair::Model::load(lo)->vision() == nullptr);
  }
  SUBCASE("one that does not fit (a text model named mmproj) is listed with its reason") {
    fs::copy_file(files().model, dir / "mmproj-wrong.gguf", fs::copy_options::overwrite_existing);
    try {
      pair::Model::load(lo);
      FAIL("loaded a text model as the projector");
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("mmproj-wrong.gguf (") != std::string::npos);
    }
    fs::remove(dir / "mmproj-wrong.gguf");
  }
  SUBCASE("several that fit: the error lists them") {
    fs::copy_file(files().mmproj, dir / "mmproj-a.gguf", fs::copy_options::overwrite_existing);
    fs::copy_file(files().mmproj, dir / "mmproj-b.gguf", fs::copy_options::overwrite_existing);
    try {
      pair::Model::load(lo);
      FAIL("picked one of two projectors");
    } catch (const Error& e) {
      CHECK(e.kind() == ErrorKind::bad_model);
      const std::string msg = e.what();
      CHECK(msg.find("several") != std::string::npos);
      CHECK(msg.find("mmproj-a.gguf") != std::string::npos);
      CHECK(msg.find("mmproj-b.gguf") != std::string::npos);
    }
    fs::remove(dir / "mmproj-a.gguf");
    fs::remove(dir / "mmproj-b.gguf");
  }
}

TEST_CASE("pair: of several projectors that fit the one whose name carries the model's is taken and named") {
  // The folder of issue 53: a model and three projectors that all fit it, named as HF repos do.
  const fs::path dir = files().dir / "by-name";
  fs::create_directories(dir);
  const fs::path model = dir / "qwen3vl-tiny-s13-q4_k_m.gguf";
  fs::copy_file(files().model, model, fs::copy_options::overwrite_existing);
  for (const char* s : {"s7", "s11", "s13"})
    fs::copy_file(files().mmproj, dir / ("mmproj-qwen3vl-tiny-" + std::string(s) + "-f16.gguf"), fs::copy_options::overwrite_existing);
  pair::LoadOptions lo;
  lo.model_path = model.string();
  lo.threads = 1;
  lo.want_vision = true;
  SUBCASE("vision wanted") {}
  SUBCASE("vision optional (serve)") { lo.vision_optional = true; }
  const auto m = pair::Model::load(lo);
  REQUIRE(m->vision() != nullptr);
  CHECK(fs::path(m->mmproj_path()).filename() == "mmproj-qwen3vl-tiny-s13-f16.gguf");
  CHECK(m->mmproj_note().find("its name carries the model's") != std::string::npos);
  // Upper case and another type tag name the same model (Qwen3-VL-2B-Instruct-Q4_K_M.gguf and
  // mmproj-Qwen3-VL-2B-Instruct-F16.gguf); a projector naming no model leaves the choice open.
  const fs::path model2 = dir / "QWEN3VL-TINY-S11-Q8_0.gguf";
  fs::copy_file(files().model, model2, fs::copy_options::overwrite_existing);
  lo.model_path = model2.string();
  CHECK(fs::path(pair::Model::load(lo)->mmproj_path()).filename() == "mmproj-qwen3vl-tiny-s11-f16.gguf");
  const fs::path model3 = dir / "other-Q4_K_M.gguf";
  fs::copy_file(files().model, model3, fs::copy_options::overwrite_existing);
  lo.model_path = model3.string();
  lo.vision_optional = false;
  CHECK_THROWS_WITH_AS(pair::Model::load(lo), doctest::Contains("none carries the model's name (other)"), Error);
  fs::remove_all(dir);
}

TEST_CASE("pair: images are placed at the text's markers / else where they were added") {
  pair::Prompt p;
  p.add_text("Read ");
  p.add_image(std::make_shared<vision::ImageEmbedding>());
  p.add_text("this.");
  CHECK(p.marked_text() == "Read <__media__>this.");
  pair::Prompt q;
  q.add_image(std::make_shared<vision::ImageEmbedding>());
  q.add_text("first <__media__> then");
  CHECK(q.marked_text() == "first <__media__> then");
}

TEST_CASE("errors: a library message names parameters that each client renders in its own terms") {
  const Error e("the prompt is 9 rows, longer than the context (8; raise $n_ctx)", ErrorKind::context_full);
  CHECK(std::string(e.what()) == "the prompt is 9 rows, longer than the context (8; raise n_ctx)");
  CHECK(cli::in_flag_terms(e) == "the prompt is 9 rows, longer than the context (8; raise -c)");
  CHECK(e.kind() == ErrorKind::context_full);
  // A '$' that names no parameter (a path, a price) is kept as written.
  CHECK(std::string(Error("cannot open '/tmp/$HOME/x'").what()) == "cannot open '/tmp/$HOME/x'");
  CHECK(std::string(e.as(ErrorKind::bad_image).what()) == e.what());
  CHECK(cli::in_flag_terms(e.as(ErrorKind::bad_image)) == cli::in_flag_terms(e));
}

}  // TEST_SUITE
