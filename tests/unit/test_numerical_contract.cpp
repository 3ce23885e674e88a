// ckjit's numerical contract: the default output (and --llama-order's) is bit-identical under every
// CKJIT_MAX_ISA this CPU runs and at every thread count, for prefill and decode. Compared byte for
// byte on --dump-logits of a teacher-forced run: the prompt is one batched prefill, the forced steps
// are decode steps. Caps this CPU cannot run are named in the output; on an AVX2-only CPU the test
// still compares thread counts. The image rows are compared for both vision precisions (f32, the
// default, and the opt-in int8).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <unistd.h>

#include "cli_run.h"
#include "synth_cache.h"
#include "skip.h"
#include "jit/isa_select.h"
#include "topology/isa.h"
#include "topology/machine.h"
#include "tests/unit/slurp.h"

namespace fs = std::filesystem;
using namespace ckjit;

namespace {

using test_io::slurp;

// The text half: a tiny model, a prompt (one batched prefill) and 20 forced ids (decode steps),
// made once per process.
struct TextContract {
  fs::path dir, model;
  std::string prompt =
      "In the beginning the page was a grid of pixels, then a row of patches, then a prefix of rows the "
      "decoder reads like words; every number on the way should be the same on every machine.";
  TextContract() {
    dir = fs::temp_directory_path() / ("ckjit_contract_" + std::to_string(getpid()));
    fs::create_directories(dir);
    REQUIRE(synth_into("--preset tiny --seed 7 --name m", dir).status == 0);
    model = dir / "m-Q4_K_M.gguf";
    REQUIRE(fs::exists(model));
    std::ofstream(dir / "forced.txt") << "11 2000 35 9 151 7000 12 13 14 15 90000 16 17 18 19 20 21 22 23 24";
  }
  ~TextContract() { fs::remove_all(dir); }

  std::string logits(const std::string& cap, int threads, const std::string& mode) const {
    const fs::path dump = dir / "lg.f32";
    CliResult r = run_ckjit("run -m '" + model.string() + "' -p '" + prompt + "' --force '" + (dir / "forced.txt").string() +
                                "' --dump-logits '" + dump.string() + "' -t " + std::to_string(threads) + " " + mode,
                            "CKJIT_MAX_ISA=" + cap);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    std::string bytes = slurp(dump);
    REQUIRE(bytes.size() == 20u * 151936u * 4u);
    return bytes;
  }
};

std::vector<int> thread_counts() {
  std::vector<int> threads = {1, 2};
  const int budget = topo::detect_machine().usable_cpus;
  if (budget > 2) threads.push_back(budget);
  return threads;
}

// Every mode's logits under `path`'s cap, at every thread count, against the avx2 floor's at one
// thread.
void check_text_cap(jit::IsaPath path) {
  static const TextContract c;
  const std::string cap = jit::isa_name(path);
  for (const char* mode : {"", "--llama-order", "--attention tiled"}) {
    CAPTURE(mode);
    const std::string floor = c.logits("avx2", 1, mode);
    for (int t : thread_counts()) {
      if (path == jit::IsaPath::Avx2 && t == 1) continue;
      CAPTURE(cap);
      CAPTURE(t);
      CHECK(c.logits(cap, t, mode) == floor);
    }
  }
}

bool cpu_runs(jit::IsaPath p) { return jit::isa_runs(p, topo::detect_isa()); }

}  // namespace

TEST_SUITE("decoder") {
TEST_CASE("numerical contract: --dump-logits at the avx2 floor is byte-identical at every thread count") {
  check_text_cap(jit::IsaPath::Avx2);
}
TEST_CASE("numerical contract: --dump-logits capped at avxvnni is the avx2 floor's bytes at every thread count") {
  if (!cpu_runs(jit::IsaPath::AvxVnni)) CKJIT_SKIP("this CPU has no AVX-VNNI (nor AVX512-VNNI)");
  check_text_cap(jit::IsaPath::AvxVnni);
}
TEST_CASE("numerical contract: --dump-logits capped at avx512 is the avx2 floor's bytes at every thread count") {
  if (!cpu_runs(jit::IsaPath::Avx512)) CKJIT_SKIP("this CPU has no AVX-512");
  check_text_cap(jit::IsaPath::Avx512);
}
TEST_CASE("numerical contract: --dump-logits capped at amx is the avx2 floor's bytes at every thread count") {
  if (!cpu_runs(jit::IsaPath::Amx)) CKJIT_SKIP("this CPU has no usable AMX");
  check_text_cap(jit::IsaPath::Amx);
}
}

TEST_SUITE("vision") {
TEST_CASE("numerical contract: image rows (--dump-embd) and the logits after them are byte-identical across caps and threads") {
  const fs::path dir = fs::temp_directory_path() / ("ckjit_contract_v_" + std::to_string(getpid()));
  fs::create_directories(dir);
  REQUIRE(synth_into("--preset tiny --seed 8 --name v", dir).status == 0);
  std::ofstream(dir / "forced.txt") << "11 2000 35 9 151";
  const fs::path img = fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / "resize-333x117.png";
  const topo::Isa cpu = topo::detect_isa();
  std::vector<std::string> caps;
  for (jit::IsaPath p : {jit::IsaPath::Avx2, jit::IsaPath::AvxVnni, jit::IsaPath::Avx512, jit::IsaPath::Amx}) {
    if (jit::isa_runs(p, cpu)) caps.push_back(jit::isa_name(p));
    else MESSAGE("CKJIT_MAX_ISA=" << jit::isa_name(p) << " not compared: this CPU lacks it");
  }
  // Both vision precisions: the default f32 and the opt-in int8 (each its own reference).
  std::string rows_of[2];
  for (int precision = 0; precision < 2; ++precision) {
  const std::string flag = precision == 0 ? "" : " --vision-precision int8";
  std::string first_rows, first_logits, first_name;
  for (const std::string& cap : caps)
    for (int t : {1, 2, 3}) {
      const std::string name = "cap " + cap + ", " + std::to_string(t) + " threads" + flag;
      CAPTURE(name);
      CliResult r = run_ckjit("run -m '" + (dir / "v-Q4_K_M.gguf").string() + "' --mmproj '" + (dir / "mmproj-v-f16.gguf").string() +
                                  "' --image '" + img.string() + "' -p 'What does it say?' --force '" + (dir / "forced.txt").string() +
                                  "' --dump-embd '" + (dir / "rows.f32").string() + "' --dump-logits '" + (dir / "lg.f32").string() +
                                  "' -t " + std::to_string(t) + flag,
                              "CKJIT_MAX_ISA=" + cap);
      REQUIRE_MESSAGE(r.status == 0, r.output);
      const std::string rows = slurp(dir / "rows.f32"), logits = slurp(dir / "lg.f32");
      REQUIRE(logits.size() == 5u * 151936u * 4u);
      REQUIRE(rows.size() % (256u * 4u * 4u) == 0);
      if (first_rows.empty()) {
        first_rows = rows, first_logits = logits, first_name = name;
        continue;
      }
      CAPTURE(first_name);
      CHECK(rows == first_rows);
      CHECK(logits == first_logits);
    }
  rows_of[precision] = first_rows;
  }
  // int8's stated tolerance: every row slice within cosine 0.999 of the f32 rows (perf/RESULTS.md
  // has the 2b page's figure), and not equal to them (the mode really changed the arithmetic).
  REQUIRE(rows_of[0].size() == rows_of[1].size());
  const float* a = reinterpret_cast<const float*>(rows_of[0].data());
  const float* b = reinterpret_cast<const float*>(rows_of[1].data());
  const size_t E = 256, slices = rows_of[0].size() / 4 / E;
  double worst = 1.0;
  for (size_t s = 0; s < slices; ++s) {
    double ab = 0, aa = 0, bb = 0;
    for (size_t i = s * E; i < (s + 1) * E; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
    worst = std::min(worst, ab / std::sqrt(aa * bb));
  }
  MESSAGE("--vision-precision int8 against f32: worst row-slice cosine " << worst);
  CHECK(worst >= 0.999);
  CHECK(rows_of[0] != rows_of[1]);
  fs::remove_all(dir);
}

// A JPEG's pixels come from libjpeg-turbo (runtime/image/jpeg_decoder.cpp), which picks its own SIMD
// at run time: its accurate integer IDCT and fancy upsampling must give the C code's bytes on every
// path, or the contract breaks before the tower. JSIMD_FORCE* picks the path (read once per
// process, hence one run each); a float IDCT (JDCT_FLOAT) would not pass this.
TEST_CASE("numerical contract: a JPEG's image rows are the same bytes whichever SIMD path libjpeg-turbo takes") {
  const fs::path dir = fs::temp_directory_path() / ("ckjit_contract_j_" + std::to_string(getpid()));
  fs::create_directories(dir);
  REQUIRE(synth_into("--preset tiny --seed 8 --name v", dir).status == 0);
  const fs::path img = fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / "big-640x480.jpg";
  std::string first;
  for (const char* env : {"JSIMD_FORCENONE=1", "JSIMD_FORCESSE2=1", "JSIMD_FORCEAVX2=1", ""}) {
    CAPTURE(env);
    CliResult r = run_ckjit("run -m '" + (dir / "v-Q4_K_M.gguf").string() + "' --mmproj '" + (dir / "mmproj-v-f16.gguf").string() +
                                "' --image '" + img.string() + "' --image-max-tokens 64 -p 'x' -n 1 --dump-embd '" +
                                (dir / "rows.f32").string() + "'",
                            env);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    const std::string rows = slurp(dir / "rows.f32");
    REQUIRE(rows.size() % (256u * 4u * 4u) == 0);
    REQUIRE(!rows.empty());
    if (first.empty()) first = rows;
    else CHECK(rows == first);
  }
  fs::remove_all(dir);
}

// --vision-precision bf16 is not bound by the contract across CPUs (AMX's tdpbf16ps sums in its
// own order), but its two implementations each keep their bits: the AMX tiles (matmuls and
// attention) for any thread count, the f32 FMA fallback for any cap below AMX and any thread count; both within cosine
// 0.999 of the f32 rows (the 2b page: 0.99998, perf/RESULTS.md) and not equal to them.
TEST_CASE("bf16 vision precision: each implementation's bits for every cap and thread count / within tolerance of f32") {
  const fs::path dir = fs::temp_directory_path() / ("ckjit_contract_bf16_" + std::to_string(getpid()));
  fs::create_directories(dir);
  REQUIRE(synth_into("--preset tiny --seed 8 --name v", dir).status == 0);
  const fs::path img = fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / "resize-333x117.png";
  auto rows = [&](const std::string& cap, int t, const std::string& flag) {
    CliResult r = run_ckjit("run -m '" + (dir / "v-Q4_K_M.gguf").string() + "' --mmproj '" + (dir / "mmproj-v-f16.gguf").string() +
                                "' --image '" + img.string() + "' -p 'What does it say?' -n 1 --dump-embd '" +
                                (dir / "rows.f32").string() + "' -t " + std::to_string(t) + flag,
                            "CKJIT_MAX_ISA=" + cap);
    REQUIRE_MESSAGE(r.status == 0, r.output);
    return slurp(dir / "rows.f32");
  };
  const topo::Isa cpu = topo::detect_isa();
  const std::string f32 = rows("avx2", 2, "");
  std::map<std::string, std::string> first;  // implementation -> its rows
  for (jit::IsaPath p : {jit::IsaPath::Avx2, jit::IsaPath::AvxVnni, jit::IsaPath::Avx512, jit::IsaPath::Amx}) {
    if (!jit::isa_runs(p, cpu)) continue;
    const std::string cap = jit::isa_name(p);
    const bool amx = p == jit::IsaPath::Amx && cpu.amx_bf16 && cpu.avx512bf16;
    const std::string impl = amx ? "amx-bf16 tiles" : "f32 FMA over bf16";
    for (int t : {1, 2, 3}) {
      CAPTURE(cap);
      CAPTURE(t);
      const std::string got = rows(cap, t, " --vision-precision bf16");
      if (!first.count(impl)) first[impl] = got;
      else CHECK(got == first[impl]);
    }
  }
  for (const auto& [impl, got] : first) {
    REQUIRE(got.size() == f32.size());
    const float* a = reinterpret_cast<const float*>(f32.data());
    const float* b = reinterpret_cast<const float*>(got.data());
    const size_t E = 256, slices = f32.size() / 4 / E;
    double worst = 1.0;
    for (size_t s = 0; s < slices; ++s) {
      double ab = 0, aa = 0, bb = 0;
      for (size_t i = s * E; i < (s + 1) * E; ++i) ab += double(a[i]) * b[i], aa += double(a[i]) * a[i], bb += double(b[i]) * b[i];
      worst = std::min(worst, ab / std::sqrt(aa * bb));
    }
    MESSAGE("--vision-precision bf16 (" << impl << ") against f32: worst row-slice cosine " << worst);
    CHECK(worst >= 0.999);
    CHECK(got != f32);
  }
  fs::remove_all(dir);
}
}  // TEST_SUITE
