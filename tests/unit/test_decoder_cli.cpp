// `ckjit run` end to end on a tiny random Qwen3-VL model with the real Qwen3 tokenizer.
#include <doctest/doctest.h>

#include "tests/unit/sanitizers.h"

#include <filesystem>
#include <iterator>
#include <fstream>
#include <unistd.h>

#include "cli_run.h"
#include "skip.h"
#include "jit/isa_select.h"
#include "topology/isa.h"
#include "tiny_qwen3vl.h"
#include "tokenizer_fixture.h"
#include "tests/unit/slurp.h"

namespace fs = std::filesystem;
using namespace ckjit;

namespace {

struct TinyFiles {
  fs::path dir, model, other_arch;
  TinyFiles() {
    dir = fs::temp_directory_path() / ("ckjit_decoder_cli_" + std::to_string(getpid()));
    fs::create_directories(dir);
    tinymodel::Spec s;
    s.vocab = &tokfix::qwen3_vocab();
    s.n_vocab = 151936;
    model = dir / "tiny.gguf";
    tinymodel::write_file(s, model.string());
    s.arch = "qwen2";
    other_arch = dir / "qwen2.gguf";
    tinymodel::write_file(s, other_arch.string());
  }
  ~TinyFiles() {
    if (!std::getenv("CKJIT_KEEP_TEST_FILES")) fs::remove_all(dir);
  }
};

const TinyFiles& files() {
  static TinyFiles f;
  return f;
}

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("ckjit run: streams text / ends with a timing line / dumps one logits row per step") {
  const auto& f = files();
  const fs::path dump = f.dir / "greedy.f32";
  CliResult r = run_ckjit("run -m " + q(f.model) + " -p 'Hello world' -n 5 -t 2 --ignore-eos --dump-logits " + q(dump));
  CAPTURE(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("timing: load") != std::string::npos);
  CHECK(r.output.find("prefill 2 tok") != std::string::npos);
  CHECK(r.output.find("decode 4 tok") != std::string::npos);
  CHECK(fs::file_size(dump) == 5u * 151936u * 4u);
  // Greedy is deterministic, also with another thread count: the same text on stdout (the
  // diagnostics go to stderr) and the same logits bits.
  const fs::path dump1 = f.dir / "greedy-t1.f32";
  auto text = [&](const std::string& threads, const fs::path& to) {
    return run_shell(std::string("('") + CKJIT_BINARY_PATH + "' run -m " + q(f.model) + " -p 'Hello world' -n 5 -t " + threads +
                     " --ignore-eos --dump-logits " + q(to) + " 2>/dev/null)");
  };
  const CliResult a = text("2", f.dir / "greedy-t2.f32"), b = text("1", dump1);
  CHECK(a.status == 0);
  CHECK(b.status == 0);
  CHECK_FALSE(a.output.empty());
  CHECK(a.output == b.output);
  auto bytes = [](const fs::path& p) {
    return test_io::slurp(p);
  };
  CHECK(bytes(dump) == bytes(dump1));
  CHECK(bytes(f.dir / "greedy-t2.f32") == bytes(dump1));
}

TEST_CASE("ckjit run: --force feeds the given ids and dumps one row per forced id") {
  const auto& f = files();
  const fs::path ids = f.dir / "ids.txt", dump = f.dir / "forced.f32";
  std::ofstream(ids) << "9707, 1879 11\n419,374 151645";
  CliResult r = run_ckjit("run -m " + q(f.model) + " -p 'The' --force " + q(ids) + " --dump-logits " + q(dump) + " -v");
  CAPTURE(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("Hello world, this is") != std::string::npos);  // the forced ids' text
  CHECK(r.output.find("dtype: ") != std::string::npos);
  CHECK(fs::file_size(dump) == 6u * 151936u * 4u);
}

}  // TEST_SUITE

namespace {
// Under the cap, every weight takes that path's JIT kernels. Without a tuned profile (the cost
// model plans): AMX tiles run only where `ckjit tune` chose them, so under the amx cap the GEMMs
// take the AVX-512 kernels of the same panels.
void check_cap_kernels(jit::IsaPath path) {
  const auto& f = files();
  const std::string name = jit::isa_name(path);
  CliResult r = run_ckjit("run -m " + q(f.model) + " -p 'Hello' -n 2 -t 1 --ignore-eos -v --no-profile", "CKJIT_MAX_ISA=" + name);
  CAPTURE(r.output);
  CHECK(r.status == 0);
  CHECK(r.output.find("ffn_gate: Q4_K x Q8_K") != std::string::npos);
  const std::string planned = path == jit::IsaPath::Amx ? "avx512" : name;
  CHECK(r.output.find("jit gemm " + planned) != std::string::npos);
  CHECK(r.output.find("scalar reference") == std::string::npos);
}
bool cpu_runs(jit::IsaPath p) { return jit::isa_runs(p, topo::detect_isa()); }
}  // namespace

TEST_SUITE("decoder") {

TEST_CASE("ckjit run: CKJIT_MAX_ISA=avx2 (the floor) runs every weight on the avx2 JIT kernels") { check_cap_kernels(jit::IsaPath::Avx2); }

TEST_CASE("ckjit run: CKJIT_MAX_ISA=avxvnni runs every weight on the avxvnni JIT kernels") {
  if (!cpu_runs(jit::IsaPath::AvxVnni)) CKJIT_SKIP("this CPU has no AVX-VNNI (nor AVX512-VNNI)");
  check_cap_kernels(jit::IsaPath::AvxVnni);
}

TEST_CASE("ckjit run: CKJIT_MAX_ISA=avx512 runs every weight on the avx512 JIT kernels") {
  if (!cpu_runs(jit::IsaPath::Avx512)) CKJIT_SKIP("this CPU has no AVX-512");
  check_cap_kernels(jit::IsaPath::Avx512);
}

TEST_CASE("ckjit run: CKJIT_MAX_ISA=amx runs every weight on the JIT kernels the untuned plans give (avx512 panels)") {
  if (!cpu_runs(jit::IsaPath::Amx)) CKJIT_SKIP("this CPU has no usable AMX");
  check_cap_kernels(jit::IsaPath::Amx);
}

TEST_CASE("ckjit run: bad input gives a clear message and a non-zero exit") {
  const auto& f = files();
  SUBCASE("prompt longer than the context") {
    CliResult r = run_ckjit("run -m " + q(f.model) + " -c 8 -p 'one two three four five six seven eight nine ten'");
    CHECK(r.status != 0);
    CHECK(r.output.find("longer than the context") != std::string::npos);
  }
  SUBCASE("another architecture") {
    CliResult r = run_ckjit("run -m " + q(f.other_arch) + " -p hi");
    CHECK(r.status != 0);
    CHECK(r.output.find("architecture 'qwen2' is not supported") != std::string::npos);
  }
  SUBCASE("an image without --mmproj") {
    CliResult r = run_ckjit("run -m " + q(f.model) + " --image x.png -p hi");
    CHECK(r.status != 0);
    CHECK(r.output.find("x.png: an image needs --mmproj") != std::string::npos);
  }
  SUBCASE("force file with junk") {
    const fs::path ids = f.dir / "junk.txt";
    std::ofstream(ids) << "12 abc";
    CliResult r = run_ckjit("run -m " + q(f.model) + " -p hi --force " + q(ids));
    CHECK(r.status != 0);
    CHECK(r.output.find("unexpected character") != std::string::npos);
  }
  SUBCASE("forced id outside the vocabulary") {
    const fs::path ids = f.dir / "big.txt";
    std::ofstream(ids) << "5 999999";
    CliResult r = run_ckjit("run -m " + q(f.model) + " -p hi --force " + q(ids));
    CHECK(r.status != 0);
    CHECK(r.output.find("outside the vocabulary") != std::string::npos);
  }
  SUBCASE("missing model file") {
    CliResult r = run_ckjit("run -m /nonexistent/m.gguf -p hi");
    CHECK(r.status != 0);
    CHECK(r.output.find("cannot open") != std::string::npos);
  }
}

TEST_CASE("ckjit run: Ctrl-C stops generation after the current token and the timing line is still printed") {
  const fs::path out = files().dir / "interrupted.out", err = files().dir / "interrupted.err";
  // Started in the background; SIGINT once text has come out (so generation is under way).
  const std::string cmd = "'" CKJIT_BINARY_PATH "' run -m " + q(files().model) + " -p Hello -n 3000 -c 3100 --ignore-eos >" + q(out) +
                          " 2>" + q(err) + " & pid=$!; for i in $(seq 1 600); do [ -s " + q(out) +
                          " ] && break; sleep 0.05; done; kill -INT $pid; wait $pid; echo status=$?";
  const CliResult r = run_shell(cmd);
  CHECK(r.output.find("status=130") != std::string::npos);
  const std::string log = test_io::slurp(err);
  CHECK(log.find("stopped: interrupted (Ctrl-C)") != std::string::npos);
  CHECK(log.find("timing: load") != std::string::npos);
  CHECK(log.find("decode 2999 tok") == std::string::npos);  // it did not run to the end
}

TEST_CASE("ckjit run: a closed stdout (a pipe whose reader left) ends the run quietly with a non-zero status") {
  const fs::path err = files().dir / "pipe.err";
  const CliResult r = run_shell("bash -c \"'" CKJIT_BINARY_PATH "' run -m " + q(files().model) + " -p Hello -n 3000 -c 3100 --ignore-eos 2>" +
                                q(err) + " | head -c 1 >/dev/null; echo status=\\${PIPESTATUS[0]}\"");
  CHECK_MESSAGE(r.output.find("status=141") != std::string::npos, r.output);  // 128 + SIGPIPE, as any filter ends
  const std::string log = test_io::slurp(err);
  CHECK(log.find("error") == std::string::npos);  // no message: the reader chose to stop
}

TEST_CASE("ckjit run: a model file truncated while it is mapped ends the run with a clear message / not a bus-error crash") {
#if CKJIT_TEST_ASAN
  CKJIT_SKIP("AddressSanitizer takes SIGBUS itself (its report replaces ckjit's message)");
#endif
  const fs::path copy = files().dir / "shrinking.gguf", out = files().dir / "shrink.out", err = files().dir / "shrink.err";
  fs::copy_file(files().model, copy, fs::copy_options::overwrite_existing);
  // Once text comes out (the token embeddings are read from the mapping every step), cut the file.
  const std::string cmd = "'" CKJIT_BINARY_PATH "' run -m " + q(copy) + " -p Hello -n 3000 -c 3100 --ignore-eos >" + q(out) + " 2>" +
                          q(err) + " & pid=$!; for i in $(seq 1 600); do [ -s " + q(out) + " ] && break; sleep 0.05; done; truncate -s 4096 " +
                          q(copy) + "; wait $pid; echo status=$?";
  const CliResult r = run_shell(cmd);
  const std::string log = test_io::slurp(err);
  CHECK_MESSAGE(r.output.find("status=1\n") != std::string::npos, r.output << log);
  CHECK(log.find("truncated or replaced while ckjit was using it") != std::string::npos);
}

}  // TEST_SUITE
