// `ckjit inspect` end to end: a written file prints its header, metadata and tensors (exit 0);
// a hostile file exits non-zero with the reader's message on stderr.
#include <doctest/doctest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <fstream>

#include "gguf_test_files.h"
#include "tests/unit/slurp.h"

using namespace gguf_test;

namespace {

struct RunResult {
  int exit_code;
  std::string out, err;
};

using test_io::slurp;

RunResult run_ckjit(const std::string& args, const std::string& tag) {
  auto dir = scratch_dir();
  auto out = dir / (tag + ".out"), err = dir / (tag + ".err");
  std::string cmd = std::string("'") + CKJIT_BINARY_PATH + "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
  int status = std::system(cmd.c_str());
  REQUIRE(WIFEXITED(status));
  return {WEXITSTATUS(status), slurp(out), slurp(err)};
}

}  // namespace

TEST_SUITE("gguf") {

TEST_CASE("ckjit inspect prints header and metadata and tensor table") {
  GgufWriter w = base_writer();
  std::vector<std::string> vocab;
  for (int i = 0; i < 500; ++i) vocab.push_back("tok" + std::to_string(i));
  w.set_string_array("tokenizer.ggml.tokens", vocab);
  w.add_tensor("blk.0.attn_q.weight", TensorType::Q4_K, {256, 4}, pattern_bytes(4 * 144, 9));
  auto path = (scratch_dir() / "cli_ok.gguf").string();
  w.write_file(path);

  RunResult r = run_ckjit("inspect '" + path + "'", "cli_ok");
  CAPTURE(r.err);
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("GGUF version 3, alignment 32") != std::string::npos);
  CHECK(r.out.find("general.architecture") != std::string::npos);
  CHECK(r.out.find("[500 strings: \"tok0\"") != std::string::npos);
  CHECK(r.out.find("tok499") == std::string::npos);  // abbreviated
  CHECK(r.out.find("blk.0.attn_q.weight") != std::string::npos);
  CHECK(r.out.find("Q4_K") != std::string::npos);
  CHECK(r.out.find("[256, 4]") != std::string::npos);
  CHECK(r.out.find("totals: 4 tensors") != std::string::npos);
}

TEST_CASE("ckjit inspect rejects a hostile file or a missing file or bad options") {
  Layout L(base_writer().to_bytes());
  auto bad = patched(L.bytes, L.tensor_type("b"), int32_t(TensorType::Q8_K));
  auto path = (scratch_dir() / "cli_bad.gguf").string();
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bad.data()), std::streamsize(bad.size()));

  RunResult r = run_ckjit("inspect '" + path + "'", "cli_bad");
  CHECK(r.exit_code == 1);
  CHECK(r.out.empty());
  CHECK(r.err.find(path) != std::string::npos);
  CHECK(r.err.find("activation-only") != std::string::npos);

  r = run_ckjit("inspect '" + path + ".missing'", "cli_missing");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("cannot open") != std::string::npos);

  r = run_ckjit("inspect", "cli_nofile");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("missing FILE") != std::string::npos);

  r = run_ckjit("inspect --no-such-option x.gguf", "cli_badopt");
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("no-such-option") != std::string::npos);
}

}  // TEST_SUITE
