// libckjit through its C API only (include/ckjit.h, linked against libckjit.so): loading, sessions,
// text and images, generation, logits and timings; two sessions on one model in two threads give
// the tokens they give one after the other; every function refuses NULL, freed or foreign handles,
// bad paths, truncated models and broken images with a status and a message. The tiny pair is
// synthesized with ckjit's own synthesizer (a C++ library linked into this test only).
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "include/ckjit.h"
#include "tests/unit/fixture_cache.h"
#include "tests/unit/json_schema_check.h"
#include "tests/unit/process_temp_dir.h"
#include "runtime/synth/qwen3vl_layout.h"
#include "runtime/synth/synth_model.h"
#include "tests/unit/slurp.h"

namespace fs = std::filesystem;

namespace {

struct Pair {
  fs::path dir;
  std::string model, mmproj;
};

// The tiny pair is synthesized once per build of this binary (tests/unit/fixture_cache.h) into a
// folder of its own (so that "the projector beside the model" finds only it); dir is this process's.
const Pair& pair() {
  static Pair p = [] {
    Pair x;
    x.dir = ckjit::test::process_temp_dir("ckjit_api_");
    fs::create_directories(x.dir);
    const auto dims = ckjit::qwen3vl::preset_dims("tiny");
    const fs::path d = fixture_cache::file("api-synth-tiny-seed11", [&](const fs::path& out) {
      ckjit::synth::SynthOptions o;
      o.seed = 11;
      o.threads = 2;
      o.tokenizer_dir = CKJIT_TOKENIZER_DIR;
      ckjit::synth::write_qwen3vl_pair(dims, o, out.string());
    });
    x.model = (d / ckjit::synth::text_file_name(dims.preset, ckjit::qwen3vl::TextMix::Q4_K_M)).string();
    x.mmproj = (d / ckjit::synth::mmproj_file_name(dims.preset, ckjit::qwen3vl::MmprojType::F16)).string();
    return x;
  }();
  return p;
}

std::string image_path(const char* name) { return (fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / name).string(); }

std::vector<char> bytes_of(const std::string& p) {
  const std::string s = test_io::slurp(p);
  return {s.begin(), s.end()};
}

ckjit_model* load(bool vision = true, int threads = 2) {
  ckjit_model_params mp;
  ckjit_model_params_default(&mp);
  mp.n_threads = threads;
  mp.n_ctx = 512;
  mp.use_profile = 0;
  ckjit_model* m = nullptr;
  const ckjit_status st = ckjit_model_load(pair().model.c_str(), vision ? pair().mmproj.c_str() : nullptr, &mp, &m);
  REQUIRE_MESSAGE(st == CKJIT_OK, ckjit_last_error());
  return m;
}

// Generates n tokens from a session whose prompt is already added.
std::vector<int32_t> gen(ckjit_session* s, int n = 4) {
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = n;
  gp.ignore_eos = 1;
  std::vector<int32_t> out(static_cast<size_t>(n));
  size_t got = 0;
  REQUIRE_MESSAGE(ckjit_generate(s, &gp, out.data(), out.size(), &got) == CKJIT_OK, ckjit_session_last_error(s));
  out.resize(got);
  return out;
}

std::vector<int32_t> run(ckjit_model* m, const char* prompt, const char* image, int n = 6) {
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  if (image) REQUIRE_MESSAGE(ckjit_session_add_image_file(s, image) == CKJIT_OK, ckjit_session_last_error(s));
  REQUIRE(ckjit_session_add_text(s, prompt) == CKJIT_OK);
  std::vector<int32_t> out = gen(s, n);
  ckjit_session_free(s);
  return out;
}

}  // namespace

TEST_SUITE("api") {

TEST_CASE("api: version and status names and the machine line") {
  CHECK(std::string(ckjit_version()) == "0.3.4");
  CHECK(std::string(ckjit_status_name(CKJIT_ERR_BAD_HANDLE)) == "bad handle");
  CHECK(std::string(ckjit_status_name(ckjit_status(999))) == "unknown status");
  REQUIRE(ckjit_machine_name() != nullptr);
  CHECK(std::strlen(ckjit_machine_name()) > 10);
  REQUIRE(ckjit_machine_json() != nullptr);
  CHECK(ckjit_machine_json()[0] == '{');
}

TEST_CASE("api: a page and a prompt give tokens and text pieces and logits and timings" * doctest::test_suite("threads")) {
  ckjit_model* m = load();
  CHECK(ckjit_model_has_vision(m) == 1);
  CHECK(ckjit_model_n_vocab(m) > 150000);
  CHECK(ckjit_model_load_ms(m) > 0);
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  REQUIRE(ckjit_session_add_image_file(s, image_path("square-64.png").c_str()) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, "Read the text.") == CKJIT_OK);
  struct Seen {
    std::vector<int32_t> ids;
    std::string text;
  } seen;
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = 5;
  gp.ignore_eos = 1;
  gp.chat = 1;
  gp.on_token = [](int32_t id, const char* text, void* u) {
    auto* v = static_cast<Seen*>(u);
    v->ids.push_back(id);
    v->text += text;
    return 0;
  };
  gp.user_data = &seen;
  int32_t toks[5];
  size_t n = 0;
  REQUIRE_MESSAGE(ckjit_generate(s, &gp, toks, 5, &n) == CKJIT_OK, ckjit_session_last_error(s));
  CHECK(n == 5);
  CHECK(seen.ids == std::vector<int32_t>(toks, toks + 5));
  int32_t nv = 0;
  const float* lg = ckjit_session_logits(s, &nv);
  REQUIRE(lg != nullptr);
  CHECK(nv == ckjit_model_n_vocab(m));
  ckjit_timings t;
  ckjit_timings_init(&t);
  REQUIRE(ckjit_session_timings(s, &t) == CKJIT_OK);
  CHECK(t.encode_ms > 0);
  CHECK(t.n_image_rows > 0);
  CHECK(t.n_prompt > t.n_image_rows);
  CHECK(t.n_decoded == 4);
  CHECK(t.load_ms == ckjit_model_load_ms(m));
  // struct_size: an older caller's smaller struct gets what fits; unset or larger is refused.
  ckjit_timings small{};
  small.struct_size = offsetof(ckjit_timings, encode_ms);
  small.encode_ms = -1;
  REQUIRE(ckjit_session_timings(s, &small) == CKJIT_OK);
  CHECK(small.load_ms == t.load_ms);
  CHECK(small.encode_ms == -1);
  ckjit_timings unset{};
  CHECK(ckjit_session_timings(s, &unset) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_session_last_error(s)).find("ckjit_timings_init") != std::string::npos);
  unset.struct_size = sizeof(ckjit_timings) + 8;
  CHECK(ckjit_session_timings(s, &unset) == CKJIT_ERR_INVALID_ARGUMENT);
  // The same page from memory gives the same tokens (greedy).
  REQUIRE(ckjit_session_reset(s) == CKJIT_OK);
  const std::vector<char> png = bytes_of(image_path("square-64.png"));
  REQUIRE(ckjit_session_add_image_bytes(s, png.data(), png.size()) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, "Read the text.") == CKJIT_OK);
  gp.on_token = nullptr;
  int32_t again[5];
  REQUIRE(ckjit_generate(s, &gp, again, 5, &n) == CKJIT_OK);
  CHECK(std::memcmp(again, toks, sizeof toks) == 0);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: after a page is read (every text and vision kernel generated) no mapping is writable and executable") {
  ckjit_model* m = load();
  const std::vector<int32_t> t = run(m, "Read.", image_path("page-small.png").c_str(), 3);
  CHECK(t.size() == 3);
  std::ifstream maps("/proc/self/maps");
  std::string line;
  int lines = 0;
  while (std::getline(maps, line)) {
    ++lines;
    const std::string perms = line.substr(line.find(' ') + 1, 4);
    CHECK_MESSAGE(!(perms[1] == 'w' && perms[2] == 'x'), line);
  }
  CHECK(lines > 10);
  ckjit_model_free(m);
}

TEST_CASE("api: the per-token callback stops generation") {
  ckjit_model* m = load(false);
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, "Hello") == CKJIT_OK);
  int calls = 0;
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = 20;
  gp.ignore_eos = 1;
  gp.on_token = [](int32_t, const char*, void* u) { return ++*static_cast<int*>(u) == 3 ? 1 : 0; };
  gp.user_data = &calls;
  size_t n = 0;
  REQUIRE(ckjit_generate(s, &gp, nullptr, 0, &n) == CKJIT_OK);
  CHECK(calls == 3);
  CHECK(n == 3);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: tokenize and detokenize round trip and a small buffer says how much is needed") {
  ckjit_model* m = load(false);
  const char* text = "Hello <|im_start|> world";
  size_t n = 0;
  CHECK(ckjit_tokenize(m, text, 1, nullptr, 0, &n) == CKJIT_ERR_BUFFER_TOO_SMALL);
  REQUIRE(n > 2);
  std::vector<int32_t> ids(n);
  REQUIRE(ckjit_tokenize(m, text, 1, ids.data(), ids.size(), &n) == CKJIT_OK);
  size_t need = 0;
  CHECK(ckjit_detokenize(m, ids.data(), ids.size(), 1, nullptr, 0, &need) == CKJIT_ERR_BUFFER_TOO_SMALL);
  CHECK(need == std::strlen(text) + 1);
  std::vector<char> buf(need);
  REQUIRE(ckjit_detokenize(m, ids.data(), ids.size(), 1, buf.data(), buf.size(), &need) == CKJIT_OK);
  CHECK(std::string(buf.data()) == text);
  const int32_t bad = -5;
  CHECK(ckjit_detokenize(m, &bad, 1, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_model_last_error(m)).find("outside the vocabulary") != std::string::npos);
  ckjit_model_free(m);
}

TEST_CASE("api: two sessions on one model in two threads give the tokens they give one after the other" * doctest::test_suite("threads")) {
  ckjit_model* m = load(true, 1);
  const std::string img = image_path("page-small.png");
  const std::vector<int32_t> a = run(m, "Read the page.", img.c_str());
  const std::vector<int32_t> b = run(m, "Something else entirely", nullptr);
  std::vector<int32_t> ta, tb;
  std::thread t1([&] { ta = run(m, "Read the page.", img.c_str()); });
  std::thread t2([&] { tb = run(m, "Something else entirely", nullptr); });
  t1.join();
  t2.join();
  CHECK(ta == a);
  CHECK(tb == b);
  ckjit_model_free(m);
}

TEST_CASE("api: a session keeps its model's weights after the model handle is freed") {
  ckjit_model* m = load(false);
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  ckjit_model_free(m);
  REQUIRE(ckjit_session_add_text(s, "Hello") == CKJIT_OK);
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = 2;
  size_t n = 0;
  CHECK(ckjit_generate(s, &gp, nullptr, 0, &n) == CKJIT_OK);
  CHECK(ckjit_session_add_text(reinterpret_cast<ckjit_session*>(m), "x") == CKJIT_ERR_BAD_HANDLE);  // the freed model
  ckjit_session_free(s);
}

TEST_CASE("api: NULL or freed or foreign handles are refused with a message and never a crash") {
  ckjit_model* m = load();
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  ckjit_model* fake_model = reinterpret_cast<ckjit_model*>(s);     // a session where a model is expected
  ckjit_session* fake_session = reinterpret_cast<ckjit_session*>(m);
  size_t n = 0;
  int32_t id = 0;
  char buf[8];
  ckjit_timings t;
  ckjit_timings_init(&t);
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  ckjit_model* out_m = nullptr;
  ckjit_session* out_s = nullptr;
  CHECK(ckjit_model_load(nullptr, nullptr, nullptr, &out_m) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_last_error()).find("model_path is NULL") != std::string::npos);
  CHECK(ckjit_model_load(pair().model.c_str(), nullptr, nullptr, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  for (ckjit_model* bad : {static_cast<ckjit_model*>(nullptr), fake_model}) {
    const ckjit_status want = bad ? CKJIT_ERR_BAD_HANDLE : CKJIT_ERR_INVALID_ARGUMENT;
    CHECK(ckjit_tokenize(bad, "x", 0, &id, 1, &n) == want);
    CHECK(ckjit_detokenize(bad, &id, 1, 0, buf, sizeof buf, &n) == want);
    CHECK(ckjit_session_new(bad, nullptr, &out_s) == want);
    CHECK(out_s == nullptr);
    CHECK(ckjit_model_n_vocab(bad) == 0);
    CHECK(ckjit_model_has_vision(bad) == 0);
    CHECK(std::strlen(ckjit_model_last_error(bad)) > 0);
    CHECK(std::strlen(ckjit_last_error()) > 0);
  }
  for (ckjit_session* bad : {static_cast<ckjit_session*>(nullptr), fake_session}) {
    const ckjit_status want = bad ? CKJIT_ERR_BAD_HANDLE : CKJIT_ERR_INVALID_ARGUMENT;
    CHECK(ckjit_session_add_text(bad, "x") == want);
    CHECK(ckjit_session_add_image_file(bad, image_path("square-64.png").c_str()) == want);
    CHECK(ckjit_session_add_image_bytes(bad, buf, sizeof buf) == want);
    CHECK(ckjit_generate(bad, &gp, &id, 1, &n) == want);
    CHECK(ckjit_session_reset(bad) == want);
    CHECK(ckjit_session_timings(bad, &t) == want);
    CHECK(ckjit_session_logits(bad, nullptr) == nullptr);
    CHECK(std::strlen(ckjit_session_last_error(bad)) > 0);
  }
  // NULL arguments on live handles.
  CHECK(ckjit_tokenize(m, nullptr, 0, &id, 1, &n) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_tokenize(m, "x", 0, &id, 1, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_tokenize(m, "x", 0, nullptr, 4, &n) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_detokenize(m, nullptr, 1, 0, buf, sizeof buf, &n) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_session_add_text(s, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_session_add_image_file(s, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_session_add_image_bytes(s, nullptr, 10) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_session_timings(s, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_session_new(m, nullptr, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_generate(s, &gp, nullptr, 3, &n) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_generate(s, &gp, nullptr, 0, &n) == CKJIT_ERR_INVALID_ARGUMENT);  // nothing added yet: empty prompt
  CHECK(std::string(ckjit_session_last_error(s)).find("empty") != std::string::npos);
  ckjit_generate_params wrong = gp;
  wrong.struct_size = 3;
  CHECK(ckjit_generate(s, &wrong, nullptr, 0, &n) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_last_error()).find("struct_size") != std::string::npos);
  // Freed handles.
  ckjit_session_free(s);
  CHECK(ckjit_session_add_text(s, "x") == CKJIT_ERR_BAD_HANDLE);
  ckjit_session_free(s);  // a second free is a no-op
  ckjit_model_free(m);
  CHECK(ckjit_tokenize(m, "x", 0, &id, 1, &n) == CKJIT_ERR_BAD_HANDLE);
  ckjit_model_free(nullptr);
  ckjit_session_free(nullptr);
}

TEST_CASE("api: a bad path or a truncated model or a mismatched pair or a bad ISA cap or a cancelled load fails cleanly") {
  ckjit_model* m = nullptr;
  CHECK(ckjit_model_load("/nonexistent/m.gguf", nullptr, nullptr, &m) == CKJIT_ERR_IO);
  CHECK(m == nullptr);
  CHECK(std::string(ckjit_last_error()).find("/nonexistent/m.gguf") != std::string::npos);
  const std::vector<char> whole = bytes_of(pair().model);
  const fs::path cut = pair().dir / "cut.gguf";
  std::ofstream(cut, std::ios::binary).write(whole.data(), long(whole.size() / 3));
  CHECK(ckjit_model_load(cut.c_str(), nullptr, nullptr, &m) == CKJIT_ERR_BAD_MODEL);
  CHECK(std::strlen(ckjit_last_error()) > 0);
  CHECK(ckjit_model_load(pair().mmproj.c_str(), nullptr, nullptr, &m) == CKJIT_ERR_BAD_MODEL);  // an mmproj as the model
  CHECK(ckjit_model_load(pair().model.c_str(), pair().model.c_str(), nullptr, &m) == CKJIT_ERR_BAD_MODEL);
  ckjit_model_params mp;
  ckjit_model_params_default(&mp);
  mp.max_isa = "sse2";
  CHECK(ckjit_model_load(pair().model.c_str(), nullptr, &mp, &m) == CKJIT_ERR_INVALID_ARGUMENT);
  ckjit_model_params_default(&mp);
  float last = -1;
  mp.progress = [](float f, void* u) {
    *static_cast<float*>(u) = f;
    return f > 0.5f ? 1 : 0;
  };
  mp.progress_user_data = &last;
  CHECK(ckjit_model_load(pair().model.c_str(), nullptr, &mp, &m) == CKJIT_ERR_CANCELLED);
  CHECK(last > 0.5f);
  CHECK(m == nullptr);
}

TEST_CASE("api: broken images or an image without a vision tower or a prompt over the context are errors and the session goes on") {
  ckjit_model* m = load();
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  const std::vector<char> png = bytes_of(image_path("square-64.png"));
  CHECK(ckjit_session_add_image_bytes(s, png.data(), png.size() / 2) == CKJIT_ERR_BAD_IMAGE);
  CHECK(std::strlen(ckjit_session_last_error(s)) > 0);
  const char junk[] = "definitely not an image";
  CHECK(ckjit_session_add_image_bytes(s, junk, sizeof junk) == CKJIT_ERR_BAD_IMAGE);
  CHECK(ckjit_session_add_image_bytes(s, junk, 0) == CKJIT_ERR_BAD_IMAGE);
  CHECK(ckjit_session_add_image_file(s, "/nonexistent.png") == CKJIT_ERR_IO);
  CHECK(ckjit_session_add_image_file(s, pair().model.c_str()) == CKJIT_ERR_BAD_IMAGE);
  // After the errors the session still works.
  REQUIRE(ckjit_session_add_text(s, "Hello") == CKJIT_OK);
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = 2;
  size_t n = 0;
  CHECK(ckjit_generate(s, &gp, nullptr, 0, &n) == CKJIT_OK);
  ckjit_session_free(s);

  ckjit_session_params sp;
  ckjit_session_params_default(&sp);
  sp.n_ctx = INT32_MAX;  // terabytes of KV cache: refused before anything is allocated
  CHECK(ckjit_session_new(m, &sp, &s) == CKJIT_ERR_OUT_OF_MEMORY);
  CHECK(std::string(ckjit_last_error()).find("not enough memory") != std::string::npos);
  sp.n_ctx = 8;
  REQUIRE(ckjit_session_new(m, &sp, &s) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, "one two three four five six seven eight nine ten eleven twelve") == CKJIT_OK);
  CHECK(ckjit_generate(s, &gp, nullptr, 0, &n) == CKJIT_ERR_CONTEXT_FULL);
  ckjit_session_free(s);
  ckjit_model_free(m);

  ckjit_model* text_only = load(false);
  REQUIRE(ckjit_session_new(text_only, nullptr, &s) == CKJIT_OK);
  CHECK(ckjit_session_add_image_file(s, image_path("square-64.png").c_str()) == CKJIT_ERR_NO_VISION);
  ckjit_session_free(s);
  ckjit_model_free(text_only);
}

TEST_CASE("api: image_info reads the header's size and refuses what is not an image") {
  const std::vector<char> png = bytes_of(image_path("wide-200x48.png"));
  int32_t w = -1, h = -1;
  REQUIRE(ckjit_image_info(png.data(), png.size(), &w, &h) == CKJIT_OK);
  CHECK(w == 200);
  CHECK(h == 48);
  const std::vector<char> jpg = bytes_of(image_path("big-640x480.jpg"));
  REQUIRE(ckjit_image_info(jpg.data(), jpg.size(), &w, &h) == CKJIT_OK);
  CHECK(w == 640);
  CHECK(h == 480);
  const char junk[] = "II*\0 a TIFF header is not one of ours, nor is this";
  CHECK(ckjit_image_info(junk, sizeof junk, &w, &h) == CKJIT_ERR_BAD_IMAGE);
  CHECK(w == 0);
  CHECK(std::strlen(ckjit_last_error()) > 0);
  CHECK(ckjit_image_info(png.data(), 10, &w, &h) == CKJIT_ERR_BAD_IMAGE);  // the signature and no header
  CHECK(ckjit_image_info(png.data(), 0, &w, &h) == CKJIT_ERR_BAD_IMAGE);
  CHECK(ckjit_image_info(nullptr, 10, &w, &h) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_image_info(png.data(), png.size(), nullptr, &h) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_image_info(png.data(), png.size(), &w, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
}

TEST_CASE("api: an encoded image handle gives the tokens of add_image_bytes and outlives its free in a prompt") {
  ckjit_model* m = load(true, 1);
  const std::vector<char> png = bytes_of(image_path("square-64.png"));
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  REQUIRE(ckjit_session_add_image_bytes(s, png.data(), png.size()) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, "Describe") == CKJIT_OK);
  const std::vector<int32_t> want = gen(s);
  REQUIRE(ckjit_session_reset(s) == CKJIT_OK);

  ckjit_image* im = nullptr;
  REQUIRE_MESSAGE(ckjit_image_encode_bytes(s, png.data(), png.size(), &im) == CKJIT_OK, ckjit_session_last_error(s));
  REQUIRE(im != nullptr);
  CHECK(ckjit_image_n_rows(im) == 9);  // 64 x 64 -> the 96 x 96 canvas -> 3 x 3 rows
  // The same count from the size alone (the default limits), and for other limits and sizes.
  CHECK(ckjit_model_image_rows(m, 64, 64, 0, 0) == 9);
  CHECK(ckjit_model_image_rows(m, 64, 64, 16, 0) >= 16);
  CHECK(ckjit_model_image_rows(m, 4000, 3000, 0, 100) <= 100);
  CHECK(ckjit_model_image_rows(m, 0, 64, 0, 0) == 0);
  CHECK(ckjit_model_image_rows(nullptr, 64, 64, 0, 0) == 0);
  CHECK(ckjit_image_bytes(im) == size_t(9) * 256 * 4 * sizeof(float));  // tiny: n_embd 256, 1 + 3 deepstack
  ckjit_timings t;
  ckjit_timings_init(&t);
  REQUIRE(ckjit_session_timings(s, &t) == CKJIT_OK);
  CHECK(t.encode_ms > 0);
  REQUIRE(ckjit_session_add_image(s, im) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, "Describe") == CKJIT_OK);
  ckjit_image_free(im);  // the pending prompt still holds the rows
  CHECK(ckjit_image_n_rows(im) == 0);
  CHECK(ckjit_image_bytes(im) == 0);
  CHECK(gen(s) == want);
  ckjit_image_free(im);  // a second free is a no-op
  ckjit_image_free(nullptr);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: an image's own token limits give the rows ckjit_model_image_rows says") {
  ckjit_model* m = load(true, 1);
  const std::vector<char> png = bytes_of(image_path("square-64.png"));
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  ckjit_image* im = nullptr;
  REQUIRE_MESSAGE(ckjit_image_encode_bytes_limits(s, png.data(), png.size(), 16, 0, &im) == CKJIT_OK, ckjit_session_last_error(s));
  CHECK(ckjit_image_n_rows(im) == ckjit_model_image_rows(m, 64, 64, 16, 0));
  CHECK(ckjit_image_n_rows(im) >= 16);
  ckjit_image_free(im);
  REQUIRE(ckjit_image_encode_bytes_limits(s, png.data(), png.size(), 0, 4, &im) == CKJIT_OK);  // max 4 below the session's min 8
  CHECK(ckjit_image_n_rows(im) == ckjit_model_image_rows(m, 64, 64, 0, 4));
  CHECK(ckjit_image_n_rows(im) <= 4);
  ckjit_image_free(im);
  REQUIRE(ckjit_image_encode_bytes_limits(s, png.data(), png.size(), 0, 0, &im) == CKJIT_OK);  // 0, 0: the session's
  CHECK(ckjit_image_n_rows(im) == 9);
  ckjit_image_free(im);
  CHECK(ckjit_image_encode_bytes_limits(s, png.data(), png.size(), 32, 16, &im) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_session_last_error(s)).find("below") != std::string::npos);
  CHECK(ckjit_image_encode_bytes_limits(s, png.data(), png.size(), -1, 0, &im) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(im == nullptr);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: image handles refuse NULL and freed and foreign handles and images of another model") {
  ckjit_model* m = load();
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  const std::vector<char> png = bytes_of(image_path("square-64.png"));
  int sentinel = 0;
  ckjit_image* im = reinterpret_cast<ckjit_image*>(&sentinel);  // must be cleared on failure
  CHECK(ckjit_image_encode_bytes(nullptr, png.data(), png.size(), &im) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(im == nullptr);
  CHECK(ckjit_image_encode_bytes(reinterpret_cast<ckjit_session*>(m), png.data(), png.size(), &im) == CKJIT_ERR_BAD_HANDLE);
  CHECK(ckjit_image_encode_bytes(s, png.data(), png.size(), nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_image_encode_bytes(s, nullptr, 5, &im) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_image_encode_bytes(s, png.data(), png.size() / 2, &im) == CKJIT_ERR_BAD_IMAGE);
  CHECK(im == nullptr);
  CHECK(std::strlen(ckjit_session_last_error(s)) > 0);
  CHECK(ckjit_session_add_image(s, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_session_add_image(s, reinterpret_cast<const ckjit_image*>(s)) == CKJIT_ERR_BAD_HANDLE);  // a session as an image
  CHECK(ckjit_image_n_rows(reinterpret_cast<const ckjit_image*>(s)) == 0);
  ckjit_image_free(reinterpret_cast<ckjit_image*>(s));  // not an image: ignored, the session lives on
  REQUIRE(ckjit_image_encode_bytes(s, png.data(), png.size(), &im) == CKJIT_OK);
  CHECK(ckjit_session_add_image(nullptr, im) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_session_add_image(reinterpret_cast<ckjit_session*>(m), im) == CKJIT_ERR_BAD_HANDLE);
  // An image of another model (same files, another load) is refused; so is one for a text-only model.
  ckjit_model* other = load();
  ckjit_session* so = nullptr;
  REQUIRE(ckjit_session_new(other, nullptr, &so) == CKJIT_OK);
  CHECK(ckjit_session_add_image(so, im) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_session_last_error(so)).find("another model") != std::string::npos);
  ckjit_session_free(so);
  ckjit_model_free(other);
  ckjit_model* text_only = load(false);
  REQUIRE(ckjit_session_new(text_only, nullptr, &so) == CKJIT_OK);
  CHECK(ckjit_image_encode_bytes(so, png.data(), png.size(), &im) == CKJIT_ERR_NO_VISION);
  CHECK(im == nullptr);
  ckjit_session_free(so);
  ckjit_model_free(text_only);
  // A freed handle.
  REQUIRE(ckjit_image_encode_bytes(s, png.data(), png.size(), &im) == CKJIT_OK);
  ckjit_image_free(im);
  CHECK(ckjit_session_add_image(s, im) == CKJIT_ERR_BAD_HANDLE);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: one image handle added to two sessions in two threads gives the tokens of one session" * doctest::test_suite("threads")) {
  ckjit_model* m = load(true, 1);
  const std::vector<char> png = bytes_of(image_path("page-small.png"));
  ckjit_session *a = nullptr, *b = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &a) == CKJIT_OK);
  REQUIRE(ckjit_session_new(m, nullptr, &b) == CKJIT_OK);
  ckjit_image* im = nullptr;
  REQUIRE(ckjit_image_encode_bytes(a, png.data(), png.size(), &im) == CKJIT_OK);
  REQUIRE(ckjit_session_add_image(a, im) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(a, "Read the page.") == CKJIT_OK);
  const std::vector<int32_t> want = gen(a);
  std::vector<int32_t> ta, tb;
  auto use = [&](ckjit_session* s, std::vector<int32_t>& out) {
    if (ckjit_session_reset(s) != CKJIT_OK || ckjit_session_add_image(s, im) != CKJIT_OK ||
        ckjit_session_add_text(s, "Read the page.") != CKJIT_OK)
      return;
    ckjit_generate_params gp;
    ckjit_generate_params_default(&gp);
    gp.n_predict = 4;
    gp.ignore_eos = 1;
    out.resize(4);
    size_t got = 0;
    if (ckjit_generate(s, &gp, out.data(), out.size(), &got) != CKJIT_OK) got = 0;
    out.resize(got);
  };
  std::thread t1([&] { use(a, ta); });
  std::thread t2([&] { use(b, tb); });
  t1.join();
  t2.join();
  CHECK(ta == want);
  CHECK(tb == want);
  ckjit_image_free(im);
  ckjit_session_free(a);
  ckjit_session_free(b);
  ckjit_model_free(m);
}

TEST_CASE("api: chat_render gives the model's template with markers kept and refuses bad messages") {
  ckjit_model* m = load();
  const ckjit_chat_message msgs[] = {CKJIT_CHAT_MESSAGE("system", "Be brief."), CKJIT_CHAT_MESSAGE("user", "What is in <__media__>?"),
                                     CKJIT_CHAT_MESSAGE("assistant", "A cat."), CKJIT_CHAT_MESSAGE("user", "Sure?")};
  size_t need = 0;
  CHECK(ckjit_chat_render(m, msgs, 4, 1, nullptr, 0, &need) == CKJIT_ERR_BUFFER_TOO_SMALL);
  REQUIRE(need > 1);
  std::string buf(need, '\0');
  REQUIRE(ckjit_chat_render(m, msgs, 4, 1, buf.data(), buf.size(), &need) == CKJIT_OK);
  const std::string text(buf.c_str());
  CHECK(text.size() + 1 == need);
  CHECK(text.rfind("<|im_start|>system\nBe brief.<|im_end|>\n", 0) == 0);
  CHECK(text.find("<|im_start|>user\nWhat is in <__media__>?<|im_end|>\n") != std::string::npos);
  CHECK(text.find("<|im_start|>assistant\nA cat.<|im_end|>\n") != std::string::npos);
  const std::string tail = "<|im_start|>user\nSure?<|im_end|>\n<|im_start|>assistant\n";
  CHECK(text.substr(text.size() - tail.size()) == tail);
  // Without the generation prompt the text ends with the last turn.
  REQUIRE(ckjit_chat_render(m, msgs, 4, 0, buf.data(), buf.size(), &need) == CKJIT_OK);
  CHECK(std::string(buf.c_str()).find("assistant\n", std::string(buf.c_str()).size() - 12) == std::string::npos);
  char small[4];
  CHECK(ckjit_chat_render(m, msgs, 1, 1, small, sizeof small, &need) == CKJIT_ERR_BUFFER_TOO_SMALL);
  CHECK(need > sizeof small);
  const ckjit_chat_message bad_role[] = {CKJIT_CHAT_MESSAGE("wizard", "x")};
  CHECK(ckjit_chat_render(m, bad_role, 1, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::strlen(ckjit_model_last_error(m)) > 0);
  const ckjit_chat_message null_content[] = {CKJIT_CHAT_MESSAGE("user", nullptr)};
  CHECK(ckjit_chat_render(m, null_content, 1, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_INVALID_ARGUMENT);
  // struct_size: unset, or different within one array, is refused with a message that says how.
  const ckjit_chat_message unsized[] = {{0, "user", "x"}};
  CHECK(ckjit_chat_render(m, unsized, 1, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_model_last_error(m)).find("CKJIT_CHAT_MESSAGE") != std::string::npos);
  const ckjit_chat_message mixed[] = {CKJIT_CHAT_MESSAGE("user", "x"), {4, "user", "y"}};
  CHECK(ckjit_chat_render(m, mixed, 2, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_chat_render(m, msgs, 0, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_INVALID_ARGUMENT);  // no message
  CHECK(ckjit_chat_render(m, nullptr, 2, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_chat_render(m, msgs, 1, 1, buf.data(), buf.size(), nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_chat_render(nullptr, msgs, 1, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_chat_render(reinterpret_cast<ckjit_model*>(&need), msgs, 1, 1, buf.data(), buf.size(), &need) == CKJIT_ERR_BAD_HANDLE);
  ckjit_model_free(m);
}

}  // TEST_SUITE

TEST_SUITE("api") {

TEST_CASE("api: find_mmproj takes the projector beside the model and names it and reads the page as the named pair does") {
  ckjit_model_params mp;
  ckjit_model_params_default(&mp);
  mp.n_threads = 2;
  mp.n_ctx = 512;
  mp.use_profile = 0;
  mp.find_mmproj = CKJIT_MMPROJ_FIND;
  mp.n_batch = 64;
  ckjit_model* found = nullptr;
  REQUIRE_MESSAGE(ckjit_model_load(pair().model.c_str(), nullptr, &mp, &found) == CKJIT_OK, ckjit_last_error());
  CHECK(ckjit_model_has_vision(found) == 1);
  CHECK(fs::equivalent(ckjit_model_mmproj_path(found), pair().mmproj));
  ckjit_model* named = load();
  CHECK(fs::equivalent(ckjit_model_mmproj_path(named), pair().mmproj));
  const std::string img = image_path("square-64.png");
  CHECK(run(found, "Read <__media__> this.", img.c_str()) == run(named, "Read " CKJIT_MEDIA_MARKER " this.", img.c_str()));
  ckjit_model* text_only = load(false);
  CHECK(std::string(ckjit_model_mmproj_path(text_only)).empty());
  mp.find_mmproj = 7;
  ckjit_model* bad = nullptr;
  CHECK(ckjit_model_load(pair().model.c_str(), nullptr, &mp, &bad) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(bad == nullptr);
  CHECK(std::string(ckjit_model_mmproj_path(nullptr)).empty());
  ckjit_model_free(text_only);
  ckjit_model_free(named);
  ckjit_model_free(found);
}

TEST_CASE("api: vision_precision int8 and bf16 read the page and an unknown precision is an invalid argument") {
  ckjit_model_params mp;
  ckjit_model_params_default(&mp);
  CHECK(mp.vision_precision == nullptr);  // the default: f32
  mp.n_threads = 2;
  mp.n_ctx = 512;
  mp.use_profile = 0;
  mp.n_batch = 64;
  const std::string img = image_path("square-64.png");
  for (const char* precision : {"int8", "bf16"}) {
    CAPTURE(precision);
    mp.vision_precision = precision;
    ckjit_model* m = nullptr;
    REQUIRE_MESSAGE(ckjit_model_load(pair().model.c_str(), pair().mmproj.c_str(), &mp, &m) == CKJIT_OK, ckjit_last_error());
    CHECK_FALSE(run(m, "Read " CKJIT_MEDIA_MARKER " this.", img.c_str()).empty());
    ckjit_model_free(m);
  }
  mp.vision_precision = "int4";
  ckjit_model* bad = nullptr;
  CHECK(ckjit_model_load(pair().model.c_str(), pair().mmproj.c_str(), &mp, &bad) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(bad == nullptr);
  CHECK(std::string(ckjit_last_error()).find("vision_precision") != std::string::npos);
}

}  // TEST_SUITE

namespace {

struct Collected {
  std::vector<int32_t> ids;
  std::string text;
};

int collect(int32_t id, const char* text, void* user) {
  auto* c = static_cast<Collected*>(user);
  c->ids.push_back(id);
  c->text += text;
  return 0;
}

}  // namespace

TEST_SUITE("api") {

TEST_CASE("api: ckjit_generate_batch gives each session ckjit_generate's tokens and a session that cannot start fails alone" * doctest::test_suite("threads")) {
  ckjit_model* m = load();
  const std::string img = image_path("square-64.png");
  // Alone: three prompts (two with the image, different lengths), one after the other.
  const char* prompts[] = {"Read this page.", "What is written here, word for word?", "Describe the image."};
  const bool with_image[] = {true, false, true};
  const int n_predict[] = {5, 9, 7};
  std::vector<Collected> alone(3), together(3);
  auto prepare = [&](ckjit_session* s, int i) {
    if (with_image[i]) REQUIRE_MESSAGE(ckjit_session_add_image_file(s, img.c_str()) == CKJIT_OK, ckjit_session_last_error(s));
    REQUIRE(ckjit_session_add_text(s, prompts[i]) == CKJIT_OK);
  };
  auto params = [&](int i, Collected* c) {
    ckjit_generate_params gp;
    ckjit_generate_params_default(&gp);
    gp.n_predict = n_predict[i], gp.ignore_eos = 1, gp.chat = 1, gp.temp = i == 1 ? 0.7f : 0.0f, gp.seed = 5;
    gp.on_token = collect, gp.user_data = c;
    return gp;
  };
  for (int i = 0; i < 3; ++i) {
    ckjit_session* s = nullptr;
    REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
    prepare(s, i);
    const ckjit_generate_params gp = params(i, &alone[size_t(i)]);
    REQUIRE_MESSAGE(ckjit_generate(s, &gp, nullptr, 0, nullptr) == CKJIT_OK, ckjit_session_last_error(s));
    ckjit_session_free(s);
  }
  // Together, plus a fourth session with no prompt: it fails alone with its own status.
  ckjit_session* ss[4] = {};
  for (auto& s : ss) REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  for (int i = 0; i < 3; ++i) prepare(ss[i], i);
  ckjit_generate_params gps[3] = {params(0, &together[0]), params(1, &together[1]), params(2, &together[2])};
  const ckjit_generate_params* pp[4] = {&gps[0], &gps[1], &gps[2], nullptr};
  ckjit_status st[4];
  size_t n_gen[4];
  CHECK(ckjit_generate_batch(ss, pp, 4, st, n_gen) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_last_error()).find("session 3") != std::string::npos);
  CHECK(std::string(ckjit_session_last_error(ss[3])).find("empty") != std::string::npos);
  CHECK(st[3] == CKJIT_ERR_INVALID_ARGUMENT);
  for (int i = 0; i < 3; ++i) {
    CAPTURE(i);
    CHECK(st[i] == CKJIT_OK);
    CHECK(n_gen[i] == size_t(n_predict[i]));
    CHECK(together[size_t(i)].ids == alone[size_t(i)].ids);
    CHECK(together[size_t(i)].text == alone[size_t(i)].text);
    ckjit_timings t;
    ckjit_timings_init(&t);
    REQUIRE(ckjit_session_timings(ss[i], &t) == CKJIT_OK);
    CHECK(t.n_decoded == n_predict[i] - 1);
  }
  // Bad calls: a session twice, none, NULL.
  ckjit_session* twice[2] = {ss[0], ss[0]};
  REQUIRE(ckjit_session_add_text(ss[0], "again") == CKJIT_OK);
  CHECK(ckjit_generate_batch(twice, nullptr, 2, nullptr, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_generate_batch(ss, nullptr, 0, nullptr, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_generate_batch(nullptr, nullptr, 2, nullptr, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  for (auto& s : ss) ckjit_session_free(s);
  ckjit_model_free(m);
}

}  // TEST_SUITE

TEST_SUITE("api") {

TEST_CASE("api: ckjit_batcher_generate from several threads gives each session ckjit_generate's tokens" * doctest::test_suite("threads")) {
  ckjit_model* m = load();
  const std::string img = image_path("square-64.png");
  const char* prompts[] = {"Read this page.", "What is written here?", "Describe it.", "One word."};
  const int n_predict[] = {6, 9, 4, 12};
  auto make = [&](int i) {
    ckjit_session* s = nullptr;
    REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
    if (i % 2 == 0) REQUIRE_MESSAGE(ckjit_session_add_image_file(s, img.c_str()) == CKJIT_OK, ckjit_session_last_error(s));
    REQUIRE(ckjit_session_add_text(s, prompts[i]) == CKJIT_OK);
    return s;
  };
  auto params = [&](int i, Collected* c) {
    ckjit_generate_params gp;
    ckjit_generate_params_default(&gp);
    gp.n_predict = n_predict[i], gp.ignore_eos = 1, gp.chat = 1, gp.temp = i == 3 ? 0.9f : 0.0f, gp.seed = 9;
    gp.on_token = collect, gp.user_data = c;
    return gp;
  };
  std::vector<Collected> alone(4), together(4);
  for (int i = 0; i < 4; ++i) {
    ckjit_session* s = make(i);
    const ckjit_generate_params gp = params(i, &alone[size_t(i)]);
    REQUIRE(ckjit_generate(s, &gp, nullptr, 0, nullptr) == CKJIT_OK);
    ckjit_session_free(s);
  }
  ckjit_batcher* b = nullptr;
  CHECK(ckjit_batcher_new(m, 0, 0, &b) == CKJIT_ERR_INVALID_ARGUMENT);
  REQUIRE(ckjit_batcher_new(m, 3, 0, &b) == CKJIT_OK);  // 3 at once: the fourth waits for a place
  std::vector<ckjit_session*> ss;
  for (int i = 0; i < 4; ++i) ss.push_back(make(i));
  std::vector<ckjit_status> st(4, CKJIT_ERR_INTERNAL);
  std::vector<size_t> n(4, 0);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      const ckjit_generate_params gp = params(i, &together[size_t(i)]);
      st[size_t(i)] = ckjit_batcher_generate(b, ss[size_t(i)], &gp, nullptr, 0, &n[size_t(i)]);
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    CHECK(st[size_t(i)] == CKJIT_OK);
    CHECK(n[size_t(i)] == size_t(n_predict[i]));
    CHECK(together[size_t(i)].ids == alone[size_t(i)].ids);
    CHECK(together[size_t(i)].text == alone[size_t(i)].text);
  }
  // An empty prompt fails that call only; a session of no prompt is refused before it reaches the engine.
  CHECK(ckjit_batcher_generate(b, ss[0], nullptr, nullptr, 0, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_batcher_generate(nullptr, ss[0], nullptr, nullptr, 0, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  for (auto* s : ss) ckjit_session_free(s);
  ckjit_batcher_free(b);
  ckjit_batcher_free(b);  // a dead handle is ignored
  ckjit_model_free(m);
}

namespace {

// Tokens and the last logits of one generation (greedy, ignore_eos) of a prompt: an image handle
// (or none) and text, in the chat template.
struct Answer {
  std::vector<int32_t> ids;
  std::vector<float> last_logits;
  int64_t cached = 0;
};

Answer answer(ckjit_session* s, ckjit_image* im, const char* text, bool cache_prompt, int n = 6) {
  if (im) REQUIRE(ckjit_session_add_image(s, im) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, text) == CKJIT_OK);
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = n, gp.ignore_eos = 1, gp.chat = 1, gp.cache_prompt = cache_prompt ? 1 : 0;
  Answer a;
  a.ids.resize(size_t(n));
  size_t got = 0;
  REQUIRE_MESSAGE(ckjit_generate(s, &gp, a.ids.data(), a.ids.size(), &got) == CKJIT_OK, ckjit_session_last_error(s));
  a.ids.resize(got);
  int32_t nv = 0;
  const float* l = ckjit_session_logits(s, &nv);
  REQUIRE(l != nullptr);
  a.last_logits.assign(l, l + nv);
  a.cached = ckjit_session_cached_rows(s);
  return a;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("api: cache_prompt reuses a shared prefix (system prompt or image) and gives the bits of an empty session") {
  ckjit_model* m = load();
  const std::vector<char> png = bytes_of(image_path("square-64.png"));
  for (int n_batch : {512, 5, 2}) {
    CAPTURE(n_batch);
    ckjit_session_params sp;
    ckjit_session_params_default(&sp);
    sp.n_batch = n_batch;
    ckjit_session *fresh = nullptr, *cached = nullptr;
    REQUIRE(ckjit_session_new(m, &sp, &fresh) == CKJIT_OK);
    REQUIRE(ckjit_session_new(m, &sp, &cached) == CKJIT_OK);
    ckjit_image* im = nullptr;
    REQUIRE(ckjit_image_encode_bytes(fresh, png.data(), png.size(), &im) == CKJIT_OK);
    struct Turn {
      bool image;
      const char* text;
    };
    // Same image, other questions; the same request twice; text only; an image again after text.
    const Turn turns[] = {{true, "Read this page."},     {true, "What is written here, line by line?"},
                          {true, "What is written here, line by line?"},
                          {false, "Read this page."},    {false, "Read this page, please."},
                          {true, "Read this page."}};
    int64_t reused_any = 0;
    for (size_t t = 0; t < std::size(turns); ++t) {
      CAPTURE(t);
      REQUIRE(ckjit_session_reset(fresh) == CKJIT_OK);
      const Answer want = answer(fresh, turns[t].image ? im : nullptr, turns[t].text, false);
      const Answer got = answer(cached, turns[t].image ? im : nullptr, turns[t].text, true);
      CHECK(want.cached == 0);
      CHECK(got.ids == want.ids);
      CHECK(same_bits(got.last_logits, want.last_logits));
      if (t == 1 || t == 2) CHECK(got.cached >= 9);  // at least the image's 9 rows kept
      if (t == 0) CHECK(got.cached == 0);
      reused_any += got.cached;
    }
    CHECK(reused_any > 0);
    // A reset forgets the cache; a plain continuation after a cached prompt goes on from the KV cache.
    REQUIRE(ckjit_session_reset(cached) == CKJIT_OK);
    const Answer after_reset = answer(cached, im, "Read this page.", true);
    CHECK(after_reset.cached == 0);
    REQUIRE(ckjit_session_reset(fresh) == CKJIT_OK);
    CHECK(answer(fresh, im, "Read this page.", false).ids == after_reset.ids);
    const Answer more_fresh = answer(fresh, nullptr, "And then?", false);
    const Answer more_cached = answer(cached, nullptr, "And then?", false);
    CHECK(more_cached.ids == more_fresh.ids);
    CHECK(same_bits(more_cached.last_logits, more_fresh.last_logits));
    ckjit_image_free(im);
    ckjit_session_free(fresh);
    ckjit_session_free(cached);
  }
  ckjit_model_free(m);
}

TEST_CASE("api: vocabulary queries and token_to_piece") {
  ckjit_model* m = load(false);
  const int32_t eos = ckjit_token_eos(m);
  CHECK(eos >= 0);
  CHECK(ckjit_token_is_eog(m, eos) == 1);
  int32_t im_end = -1;
  size_t n = 0;
  REQUIRE(ckjit_tokenize(m, "<|im_end|>", 1, &im_end, 1, &n) == CKJIT_OK);
  REQUIRE(n == 1);
  CHECK(ckjit_token_is_eog(m, im_end) == 1);
  int32_t hello[8];
  REQUIRE(ckjit_tokenize(m, "Hello world", 0, hello, 8, &n) == CKJIT_OK);
  REQUIRE(n >= 2);
  CHECK(ckjit_token_is_eog(m, hello[0]) == 0);
  CHECK(ckjit_token_is_eog(m, -1) == 0);
  CHECK(ckjit_token_is_eog(nullptr, eos) == 0);
  CHECK(ckjit_token_bos(nullptr) == -1);
  // The pieces of a text's tokens join into the text.
  std::string joined;
  for (size_t i = 0; i < n; ++i) {
    char buf[64];
    size_t len = 0;
    REQUIRE(ckjit_token_to_piece(m, hello[i], 0, buf, sizeof buf, &len) == CKJIT_OK);
    joined.append(buf, len);
  }
  CHECK(joined == "Hello world");
  size_t len = 0;
  CHECK(ckjit_token_to_piece(m, hello[1], 0, nullptr, 0, &len) == CKJIT_ERR_BUFFER_TOO_SMALL);
  CHECK(len == 6);  // " world"
  char buf[32];
  CHECK(ckjit_token_to_piece(m, im_end, 0, buf, sizeof buf, &len) == CKJIT_OK);
  CHECK(len == 0);  // a control token's text only when special
  CHECK(ckjit_token_to_piece(m, im_end, 1, buf, sizeof buf, &len) == CKJIT_OK);
  CHECK(std::string(buf, len) == "<|im_end|>");
  CHECK(ckjit_token_to_piece(m, 1 << 30, 0, buf, sizeof buf, &len) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_token_to_piece(m, hello[0], 0, buf, sizeof buf, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  ckjit_model_free(m);
}

namespace {
struct AbortAfter {
  int calls = 0, stop_at = 0;
};
int abort_after(void* user) {
  auto* a = static_cast<AbortAfter*>(user);
  return ++a->calls >= a->stop_at ? 1 : 0;
}
}  // namespace

TEST_CASE("api: the abort callback stops prefill and decode and image encode with CKJIT_ERR_CANCELLED and the session goes on") {
  ckjit_model* m = load();
  ckjit_session_params sp;
  ckjit_session_params_default(&sp);
  sp.n_batch = 4;  // a prompt of several chunks
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, &sp, &s) == CKJIT_OK);
  const char* text = "Read the whole page, every line of it, and then say what it is about in one sentence.";
  // Without a stop the callback is asked and nothing changes.
  AbortAfter never{0, 1 << 30};
  REQUIRE(ckjit_session_set_abort_callback(s, abort_after, &never) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, text) == CKJIT_OK);
  const std::vector<int32_t> want = gen(s, 5);
  CHECK(never.calls > 5);
  // In the prefill (the second chunk).
  REQUIRE(ckjit_session_reset(s) == CKJIT_OK);
  AbortAfter prefill{0, 2};
  REQUIRE(ckjit_session_set_abort_callback(s, abort_after, &prefill) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, text) == CKJIT_OK);
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = 5, gp.ignore_eos = 1;
  CHECK(ckjit_generate(s, &gp, nullptr, 0, nullptr) == CKJIT_ERR_CANCELLED);
  CHECK(std::string(ckjit_session_last_error(s)).find("abort") != std::string::npos);
  CHECK(ckjit_session_n_past(s) == 4);  // the first chunk stays
  // In the image encode.
  AbortAfter encode{0, 1};
  REQUIRE(ckjit_session_set_abort_callback(s, abort_after, &encode) == CKJIT_OK);
  CHECK(ckjit_session_add_image_file(s, image_path("square-64.png").c_str()) == CKJIT_ERR_CANCELLED);
  // Removed: the session reads as before.
  REQUIRE(ckjit_session_set_abort_callback(s, nullptr, nullptr) == CKJIT_OK);
  REQUIRE(ckjit_session_reset(s) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, text) == CKJIT_OK);
  CHECK(gen(s, 5) == want);
  // In a batch: only the aborted session stops.
  ckjit_session* other = nullptr;
  REQUIRE(ckjit_session_new(m, &sp, &other) == CKJIT_OK);
  REQUIRE(ckjit_session_reset(s) == CKJIT_OK);
  AbortAfter late{0, 12};
  REQUIRE(ckjit_session_set_abort_callback(s, abort_after, &late) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, text) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(other, text) == CKJIT_OK);
  ckjit_session* both[] = {s, other};
  ckjit_status st[2];
  size_t got[2];
  CHECK(ckjit_generate_batch(both, nullptr, 2, st, got) == CKJIT_ERR_CANCELLED);
  CHECK(st[0] == CKJIT_ERR_CANCELLED);
  CHECK(st[1] == CKJIT_OK);
  CHECK(got[1] > 0);
  ckjit_session_free(other);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: truncate keeps a prefix of the KV cache and the next prompt continues after it") {
  ckjit_model* m = load(false);
  ckjit_session *a = nullptr, *b = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &a) == CKJIT_OK);
  REQUIRE(ckjit_session_new(m, nullptr, &b) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(a, "The first part of the story.") == CKJIT_OK);
  gen(a, 6);
  ckjit_timings t;
  ckjit_timings_init(&t);
  REQUIRE(ckjit_session_timings(a, &t) == CKJIT_OK);
  CHECK(ckjit_session_n_past(a) == t.n_prompt + 5);  // the last sampled token is not decoded
  REQUIRE(ckjit_session_truncate(a, t.n_prompt) == CKJIT_OK);  // drop the answer
  CHECK(ckjit_session_n_past(a) == t.n_prompt);
  CHECK(ckjit_session_truncate(a, t.n_prompt + 1) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(ckjit_session_truncate(a, -1) == CKJIT_ERR_INVALID_ARGUMENT);
  REQUIRE(ckjit_session_add_text(a, " And then?") == CKJIT_OK);
  const std::vector<int32_t> got = gen(a, 6);
  // b: the same first prompt prefilled (no answer), then the same continuation.
  REQUIRE(ckjit_session_add_text(b, "The first part of the story.") == CKJIT_OK);
  gen(b, 0);
  REQUIRE(ckjit_session_add_text(b, " And then?") == CKJIT_OK);
  CHECK(gen(b, 6) == got);
  CHECK(ckjit_session_n_past(nullptr) == 0);
  ckjit_session_free(a);
  ckjit_session_free(b);
  ckjit_model_free(m);
}

TEST_CASE("api: logit_bias bans and forces tokens and the penalties change greedy picks and bad entries are invalid arguments") {
  ckjit_model* m = load(false);
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  auto greedy = [&](const ckjit_generate_params& base) {
    ckjit_session_reset(s);
    REQUIRE(ckjit_session_add_text(s, "Hello there") == CKJIT_OK);
    ckjit_generate_params gp = base;
    gp.n_predict = 6;
    gp.ignore_eos = 1;
    std::vector<int32_t> out(6);
    size_t n = 0;
    const ckjit_status st = ckjit_generate(s, &gp, out.data(), out.size(), &n);
    out.resize(st == CKJIT_OK ? n : 0);
    return std::make_pair(st, out);
  };
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  CHECK(gp.frequency_penalty == 0.0f);
  CHECK(gp.presence_penalty == 0.0f);
  CHECK(gp.logit_bias == nullptr);
  const auto plain = greedy(gp);
  REQUIRE(plain.first == CKJIT_OK);
  // Banning the first pick makes another token first.
  ckjit_logit_bias ban{plain.second[0], -INFINITY};
  gp.logit_bias = &ban;
  gp.n_logit_bias = 1;
  const auto banned = greedy(gp);
  REQUIRE(banned.first == CKJIT_OK);
  CHECK(banned.second[0] != plain.second[0]);
  for (int32_t t : banned.second) CHECK(t != ban.token);
  // A large bias forces a token at every step (no penalties).
  ckjit_logit_bias force{7, 1000.0f};
  gp.logit_bias = &force;
  const auto forced = greedy(gp);
  REQUIRE(forced.first == CKJIT_OK);
  CHECK(forced.second == std::vector<int32_t>(6, 7));
  // ... unless the presence penalty outweighs it once the token has been seen.
  gp.presence_penalty = 5000.0f;
  gp.repeat_last_n = 64;
  const auto spread = greedy(gp);
  REQUIRE(spread.first == CKJIT_OK);
  CHECK(spread.second[0] == 7);
  CHECK(std::count(spread.second.begin(), spread.second.end(), 7) == 1);
  gp.presence_penalty = 0.0f;
  gp.frequency_penalty = 5000.0f;
  const auto freq = greedy(gp);
  REQUIRE(freq.first == CKJIT_OK);
  CHECK(std::count(freq.second.begin(), freq.second.end(), 7) == 1);
  // Outside the vocabulary, or a count without an array: refused before anything runs.
  gp.frequency_penalty = 0.0f;
  ckjit_logit_bias outside{ckjit_model_n_vocab(m), 1.0f};
  gp.logit_bias = &outside;
  CHECK(greedy(gp).first == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_session_last_error(s)).find("logit_bias") != std::string::npos);
  gp.logit_bias = nullptr;
  CHECK(greedy(gp).first == CKJIT_ERR_INVALID_ARGUMENT);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: stop_reason says length or end of generation or callback or context full and NONE before and for bad handles") {
  ckjit_model* m = load(false);
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  CHECK(ckjit_session_stop_reason(s) == CKJIT_STOP_NONE);
  CHECK(ckjit_session_stop_reason(nullptr) == CKJIT_STOP_NONE);
  CHECK(ckjit_model_image_rows(m, 64, 64, 0, 0) == 0);  // no vision tower
  auto go = [&](ckjit_generate_params gp, size_t* n) {
    ckjit_session_reset(s);
    REQUIRE(ckjit_session_add_text(s, "Hello there") == CKJIT_OK);
    return ckjit_generate(s, &gp, nullptr, 0, n);
  };
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = 3;
  gp.ignore_eos = 1;
  size_t n = 0;
  REQUIRE(go(gp, &n) == CKJIT_OK);
  CHECK(n == 3);
  CHECK(ckjit_session_stop_reason(s) == CKJIT_STOP_LENGTH);
  // The end-of-generation token forced first: one token, and it is counted.
  gp.ignore_eos = 0;
  ckjit_logit_bias eos{ckjit_token_eos(m), 1000.0f};
  gp.logit_bias = &eos;
  gp.n_logit_bias = 1;
  REQUIRE(go(gp, &n) == CKJIT_OK);
  CHECK(n == 1);
  CHECK(ckjit_session_stop_reason(s) == CKJIT_STOP_END_OF_GENERATION);
  gp.logit_bias = nullptr;
  gp.n_logit_bias = 0;
  gp.ignore_eos = 1;
  gp.on_token = [](int32_t, const char*, void*) { return 1; };
  REQUIRE(go(gp, &n) == CKJIT_OK);
  CHECK(n == 1);
  CHECK(ckjit_session_stop_reason(s) == CKJIT_STOP_CALLBACK);
  gp.on_token = nullptr;
  gp.n_predict = 100000;  // the context (512) fills first
  REQUIRE(go(gp, &n) == CKJIT_OK);
  CHECK(n > 400);
  CHECK(ckjit_session_stop_reason(s) == CKJIT_STOP_CONTEXT_FULL);
  // A call that fails before generating leaves NONE.
  ckjit_session_reset(s);
  CHECK(ckjit_generate(s, &gp, nullptr, 0, &n) != CKJIT_OK);  // empty prompt
  CHECK(ckjit_session_stop_reason(s) == CKJIT_STOP_NONE);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: the params' defaults are written as far as the caller's struct_size reaches") {
  // An older caller, compiled before cache_prompt: its struct ends there, the byte after is its own.
  struct {
    ckjit_generate_params p;
    uint8_t after[16];
  } old{};
  std::memset(&old, 0xAB, sizeof old);
  const uint32_t old_size = uint32_t(offsetof(ckjit_generate_params, cache_prompt));
  ckjit_generate_params_init(&old.p, old_size);
  CHECK(old.p.struct_size == old_size);
  CHECK(old.p.n_predict == 256);
  CHECK(old.p.top_k == 40);
  const uint8_t* tail = reinterpret_cast<const uint8_t*>(&old.p) + old_size;
  CHECK(tail[0] == 0xAB);
  // A newer caller's larger struct: this library's fields, zeros after them.
  struct {
    ckjit_generate_params p;
    uint8_t newer[16];
  } big;
  std::memset(&big, 0xAB, sizeof big);
  ckjit_generate_params_init(&big.p, uint32_t(sizeof big));
  CHECK(big.p.struct_size == sizeof big);
  CHECK(big.p.n_predict == 256);
  CHECK(big.p.cache_prompt == 0);
  for (uint8_t b : big.newer) CHECK(b == 0);
  // Too small for struct_size itself, or NULL: nothing written, no crash.
  ckjit_session_params sp;
  std::memset(&sp, 0xAB, sizeof sp);
  ckjit_session_params_init(&sp, 2);
  CHECK(reinterpret_cast<const uint8_t*>(&sp)[0] == 0xAB);
  ckjit_model_params_init(nullptr, sizeof(ckjit_model_params));
  // The inline defaults pass the caller's own sizeof.
  ckjit_model_params mp;
  ckjit_model_params_default(&mp);
  CHECK(mp.struct_size == sizeof mp);
  CHECK(mp.use_profile == 1);
  // An older caller's params are read as far as they reach (the rest takes the defaults).
  ckjit_model* m = load(false);
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(s, "Hello") == CKJIT_OK);
  old.p.n_predict = 3;
  old.p.ignore_eos = 1;
  size_t n = 0;
  REQUIRE(ckjit_generate(s, &old.p, nullptr, 0, &n) == CKJIT_OK);
  CHECK(n == 3);
  ckjit_session_free(s);
  ckjit_model_free(m);
}

namespace {

std::vector<int32_t> tokens_of(ckjit_model* m, const char* text) {
  std::vector<int32_t> ids(256);
  size_t n = 0;
  REQUIRE(ckjit_tokenize(m, text, 1, ids.data(), ids.size(), &n) == CKJIT_OK);
  ids.resize(n);
  return ids;
}

std::vector<float> logits_row(const ckjit_session* s, int32_t i) {
  int32_t nv = 0;
  const float* l = ckjit_session_logits_ith(s, i, &nv);
  REQUIRE(l != nullptr);
  return std::vector<float>(l, l + nv);
}

}  // namespace

TEST_CASE("api: ckjit_session_decode gives generate's logits and every position's on request and refuses what does not fit") {
  ckjit_model* m = load(false);
  const char* text = "Read the page and tell me what the second line says.";
  ckjit_session *a = nullptr, *b = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &a) == CKJIT_OK);
  REQUIRE(ckjit_session_new(m, nullptr, &b) == CKJIT_OK);
  const std::vector<int32_t> ids = tokens_of(m, text);
  REQUIRE(ids.size() > 6);
  REQUIRE(ckjit_session_decode(a, ids.data(), ids.size(), 1) == CKJIT_OK);
  CHECK(ckjit_session_n_past(a) == int64_t(ids.size()));
  REQUIRE(ckjit_session_add_text(b, text) == CKJIT_OK);
  gen(b, 1);
  int32_t nv = 0;
  const float* gl = ckjit_session_logits(b, &nv);
  REQUIRE(gl != nullptr);
  CHECK(same_bits(logits_row(a, -1), std::vector<float>(gl, gl + nv)));
  CHECK(same_bits(logits_row(a, int32_t(ids.size()) - 1), logits_row(a, -1)));
  CHECK(ckjit_session_logits_ith(a, int32_t(ids.size()), &nv) == nullptr);
  CHECK(ckjit_session_logits_ith(a, -int32_t(ids.size()) - 1, &nv) == nullptr);
  // Row i of one batch = the last row of the first i + 1 tokens decoded alone.
  const size_t half = ids.size() / 2;
  ckjit_session* c = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &c) == CKJIT_OK);
  REQUIRE(ckjit_session_decode(c, ids.data(), half + 1, 0) == CKJIT_OK);
  CHECK(same_bits(logits_row(c, 0), logits_row(a, int32_t(half))));
  CHECK(ckjit_session_logits_ith(c, 1, &nv) == nullptr);  // only the last row was asked for
  // Errors: no tokens, ids outside the vocabulary, more than the context.
  CHECK(ckjit_session_decode(c, ids.data(), 0, 0) == CKJIT_ERR_INVALID_ARGUMENT);
  const int32_t bad = 1 << 30;
  CHECK(ckjit_session_decode(c, &bad, 1, 0) == CKJIT_ERR_INVALID_ARGUMENT);
  std::vector<int32_t> lots(600, ids[0]);
  const int64_t before = ckjit_session_n_past(c);
  CHECK(ckjit_session_decode(c, lots.data(), lots.size(), 0) == CKJIT_ERR_CONTEXT_FULL);
  CHECK(ckjit_session_n_past(c) == before);
  for (ckjit_session* s : {a, b, c}) ckjit_session_free(s);
  ckjit_model_free(m);
}

TEST_CASE("api: copy_prefix and decode_together: each session's logits are those it gets alone" * doctest::test_suite("threads")) {
  ckjit_model* m = load(false);
  const char* texts[] = {"The quick brown fox jumps.", "A page of numbers: 1 2 3 4 5 6 7 8 9."};
  ckjit_session *s[2] = {}, *alone[2] = {};
  for (int i = 0; i < 2; ++i) {
    REQUIRE(ckjit_session_new(m, nullptr, &s[i]) == CKJIT_OK);
    REQUIRE(ckjit_session_new(m, nullptr, &alone[i]) == CKJIT_OK);
    const std::vector<int32_t> ids = tokens_of(m, texts[i]);
    REQUIRE(ckjit_session_decode(s[i], ids.data(), ids.size(), 0) == CKJIT_OK);
    REQUIRE(ckjit_session_copy_prefix(alone[i], s[i], ckjit_session_n_past(s[i])) == CKJIT_OK);
    CHECK(ckjit_session_n_past(alone[i]) == ckjit_session_n_past(s[i]));
  }
  const int32_t next[2] = {1000, 2000};
  for (int step = 0; step < 3; ++step) {
    REQUIRE(ckjit_decode_together(s, next, 2) == CKJIT_OK);
    for (int i = 0; i < 2; ++i) {
      CAPTURE(step);
      CAPTURE(i);
      REQUIRE(ckjit_session_decode(alone[i], &next[i], 1, 0) == CKJIT_OK);
      CHECK(same_bits(logits_row(s[i], 0), logits_row(alone[i], 0)));
    }
  }
  // A copy of part of a prefix continues as the original would from there.
  ckjit_session* part = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &part) == CKJIT_OK);
  const std::vector<int32_t> ids = tokens_of(m, texts[1]);
  REQUIRE(ckjit_session_copy_prefix(part, s[1], 4) == CKJIT_OK);
  REQUIRE(ckjit_session_decode(part, ids.data() + 4, ids.size() - 4, 0) == CKJIT_OK);
  ckjit_session* whole = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &whole) == CKJIT_OK);
  REQUIRE(ckjit_session_decode(whole, ids.data(), ids.size(), 0) == CKJIT_OK);
  CHECK(same_bits(logits_row(part, -1), logits_row(whole, -1)));
  // Refused: more rows than the source holds, the same session twice, a session of another model.
  CHECK(ckjit_session_copy_prefix(part, s[1], ckjit_session_n_past(s[1]) + 1) == CKJIT_ERR_INVALID_ARGUMENT);
  ckjit_session* twice[2] = {s[0], s[0]};
  CHECK(ckjit_decode_together(twice, next, 2) != CKJIT_OK);
  ckjit_model* other = load(false);
  ckjit_session* foreign = nullptr;
  REQUIRE(ckjit_session_new(other, nullptr, &foreign) == CKJIT_OK);
  CHECK(ckjit_session_copy_prefix(foreign, s[0], 1) == CKJIT_ERR_INVALID_ARGUMENT);
  ckjit_session* mixed[2] = {s[0], foreign};
  CHECK(ckjit_decode_together(mixed, next, 2) == CKJIT_ERR_INVALID_ARGUMENT);
  for (ckjit_session* x : {s[0], s[1], alone[0], alone[1], part, whole, foreign}) ckjit_session_free(x);
  ckjit_model_free(other);
  ckjit_model_free(m);
}

TEST_CASE("api: a saved state loads into another session and decodes on identically and bad files are refused") {
  ckjit_model* m = load(false);
  ckjit_session *a = nullptr, *b = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &a) == CKJIT_OK);
  REQUIRE(ckjit_session_new(m, nullptr, &b) == CKJIT_OK);
  const std::vector<int32_t> ids = tokens_of(m, "A long prompt that a later process should not prefill again.");
  REQUIRE(ckjit_session_decode(a, ids.data(), ids.size(), 0) == CKJIT_OK);
  const fs::path dir = ckjit::test::process_temp_dir("ckjit_state_");
  fs::create_directories(dir);
  const std::string path = (dir / "a.state").string();
  REQUIRE_MESSAGE(ckjit_session_save_state(a, path.c_str()) == CKJIT_OK, ckjit_session_last_error(a));
  CHECK_FALSE(fs::exists(path + ".part"));
  REQUIRE_MESSAGE(ckjit_session_load_state(b, path.c_str()) == CKJIT_OK, ckjit_session_last_error(b));
  CHECK(ckjit_session_n_past(b) == ckjit_session_n_past(a));
  const int32_t t = 777;
  REQUIRE(ckjit_session_decode(a, &t, 1, 0) == CKJIT_OK);
  REQUIRE(ckjit_session_decode(b, &t, 1, 0) == CKJIT_OK);
  CHECK(same_bits(logits_row(a, 0), logits_row(b, 0)));
  // A text prompt continues after the loaded rows as after the original ones.
  REQUIRE(ckjit_session_add_text(a, " Go on.") == CKJIT_OK);
  REQUIRE(ckjit_session_add_text(b, " Go on.") == CKJIT_OK);
  CHECK(gen(a, 4) == gen(b, 4));

  const std::vector<char> good = bytes_of(path);
  auto write_file = [&](const std::vector<char>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
  };
  auto refused = [&](const char* why, const char* says) {
    CAPTURE(why);
    CHECK(ckjit_session_load_state(b, path.c_str()) == CKJIT_ERR_INVALID_ARGUMENT);
    CHECK(std::string(ckjit_session_last_error(b)).find(says) != std::string::npos);
    CHECK(ckjit_session_n_past(b) == 0);
  };
  std::vector<char> bytes = good;
  bytes[bytes.size() / 2] ^= 0x10;
  write_file(bytes);
  refused("one bit flipped", "checksum");
  write_file(std::vector<char>(good.begin(), good.begin() + std::ptrdiff_t(good.size() / 3)));
  refused("cut off", "ends early");
  bytes = good;
  bytes[0] = 'X';
  write_file(bytes);
  refused("not a state file", "not a ckjit session state");
  write_file(good);
  ckjit_session_params small;
  ckjit_session_params_default(&small);
  small.n_ctx = 8;
  ckjit_session* tiny_ctx = nullptr;
  REQUIRE(ckjit_session_new(m, &small, &tiny_ctx) == CKJIT_OK);
  CHECK(ckjit_session_load_state(tiny_ctx, path.c_str()) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_session_last_error(tiny_ctx)).find("context") != std::string::npos);
  // Random damage (bytes overwritten, inserted, cut) is refused or, where it only hit a panel's
  // unused lanes, loads; never a crash (the ASan build runs this too).
  std::mt19937 rng(5);
  int refused_n = 0;
  for (int k = 0; k < 150; ++k) {
    bytes = good;
    const int kind = k % 3;
    const size_t at = rng() % bytes.size();
    if (kind == 0) {
      for (int j = 0; j < 4 && at + size_t(j) < bytes.size(); ++j) bytes[at + size_t(j)] = char(rng());
    } else if (kind == 1) bytes.insert(bytes.begin() + std::ptrdiff_t(at), char(rng()));
    else bytes.resize(at);
    write_file(bytes);
    const ckjit_status st = ckjit_session_load_state(b, path.c_str());
    CHECK((st == CKJIT_OK || st == CKJIT_ERR_INVALID_ARGUMENT));
    if (st != CKJIT_OK) {
      CHECK(ckjit_session_n_past(b) == 0);
      ++refused_n;
    }
  }
  CHECK(refused_n > 100);
  write_file(good);
  CHECK(ckjit_session_load_state(b, (dir / "missing").string().c_str()) == CKJIT_ERR_IO);
  CHECK(ckjit_session_save_state(a, (dir / "no" / "such" / "dir").string().c_str()) == CKJIT_ERR_IO);
  // Another model file (same shapes, other weights).
  const fs::path other_dir = dir / "other";
  ckjit::synth::SynthOptions o;
  o.seed = 12;
  o.threads = 2;
  o.tokenizer_dir = CKJIT_TOKENIZER_DIR;
  const auto files = ckjit::synth::write_qwen3vl_pair(ckjit::qwen3vl::preset_dims("tiny"), o, other_dir.string());
  ckjit_model* other = nullptr;
  REQUIRE(ckjit_model_load(files.text_path.c_str(), nullptr, nullptr, &other) == CKJIT_OK);
  ckjit_session* os = nullptr;
  REQUIRE(ckjit_session_new(other, nullptr, &os) == CKJIT_OK);
  CHECK(ckjit_session_load_state(os, path.c_str()) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_session_last_error(os)).find("another model") != std::string::npos);
  for (ckjit_session* x : {a, b, tiny_ctx, os}) ckjit_session_free(x);
  ckjit_model_free(other);
  ckjit_model_free(m);
}

}  // TEST_SUITE

TEST_CASE("api: json_schema and grammar make the text a value of the schema or grammar and what is outside the subset is an invalid argument" * doctest::test_suite("api")) {
  ckjit_model* m = load(false);
  ckjit_session* s = nullptr;
  REQUIRE(ckjit_session_new(m, nullptr, &s) == CKJIT_OK);
  const char* schema = R"({"type":"object","properties":{"name":{"type":"string","maxLength":10},"pages":{"type":"integer"},
                           "kind":{"enum":["invoice","letter"]}},"required":["name","pages","kind"]})";
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  CHECK(gp.json_schema == nullptr);
  gp.json_schema = schema;
  gp.n_predict = 300;
  gp.temp = 1.0f;
  std::string text;
  gp.on_token = [](int32_t, const char* piece, void* user) {
    *static_cast<std::string*>(user) += piece;
    return 0;
  };
  gp.user_data = &text;
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    text.clear();
    gp.seed = seed;
    ckjit_session_reset(s);
    REQUIRE(ckjit_session_add_text(s, "Describe the document as JSON.") == CKJIT_OK);
    REQUIRE(ckjit_generate(s, &gp, nullptr, 0, nullptr) == CKJIT_OK);
    CHECK(ckjit_session_stop_reason(s) == CKJIT_STOP_END_OF_GENERATION);
    CAPTURE(text);
    CHECK(schemacheck::check(text, schema) == "");
  }
  // A GBNF grammar the same way; both at once is refused.
  gp.json_schema = nullptr;
  gp.grammar = R"(root ::= [0-9]{4} "-" [01] [0-9] "-" [0-3] [0-9])";
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    text.clear();
    gp.seed = seed;
    ckjit_session_reset(s);
    REQUIRE(ckjit_session_add_text(s, "The date:") == CKJIT_OK);
    REQUIRE(ckjit_generate(s, &gp, nullptr, 0, nullptr) == CKJIT_OK);
    CAPTURE(text);
    REQUIRE(text.size() == 10);
    CHECK(text[4] == '-');
    CHECK(text[7] == '-');
  }
  CHECK(ckjit_grammar_check("root ::= root") == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_last_error()).find("refers back to itself") != std::string::npos);
  CHECK(ckjit_grammar_check(gp.grammar) == CKJIT_OK);
  gp.json_schema = schema;
  ckjit_session_reset(s);
  REQUIRE(ckjit_session_add_text(s, "x") == CKJIT_OK);
  CHECK(ckjit_generate(s, &gp, nullptr, 0, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  gp.grammar = nullptr;
  gp.json_schema = R"({"type":"string","format":"date"})";
  ckjit_session_reset(s);
  REQUIRE(ckjit_session_add_text(s, "x") == CKJIT_OK);
  CHECK(ckjit_generate(s, &gp, nullptr, 0, nullptr) == CKJIT_ERR_INVALID_ARGUMENT);
  CHECK(std::string(ckjit_session_last_error(s)).find("'format'") != std::string::npos);
  ckjit_session_free(s);
  ckjit_model_free(m);
}
