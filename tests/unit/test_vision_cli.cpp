// `ckjit run --mmproj --image` end to end on a synthesized tiny pair, and the bad inputs of the
// image path: each gives a clear message naming the file and the problem and a non-zero exit.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/cli_run.h"
#include "tests/unit/process_temp_dir.h"
#include "tests/unit/synth_cache.h"
#include "tests/unit/slurp.h"

namespace fs = std::filesystem;

namespace {

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

struct Pair {
  fs::path dir, model, mmproj, other_mmproj;
  fs::path image(const char* name) const { return fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / name; }
};

const Pair& pair() {
  static Pair p = [] {
    Pair x;
    x.dir = ckjit::test::process_temp_dir("ckjit_vision_cli_");
    fs::create_directories(x.dir);
    synth_into("--preset tiny --seed 3 --name t", x.dir);
    synth_into("--preset tiny --seed 4 --embd 512 --name wide", x.dir);
    x.model = x.dir / "t-Q4_K_M.gguf", x.mmproj = x.dir / "mmproj-t-f16.gguf";
    x.other_mmproj = x.dir / "mmproj-wide-f16.gguf";
    return x;
  }();
  return p;
}

std::vector<char> bytes_of(const fs::path& p) {
  const std::string s = test_io::slurp(p);
  return {s.begin(), s.end()};
}

void write(const fs::path& p, const std::vector<char>& b) { std::ofstream(p, std::ios::binary).write(b.data(), long(b.size())); }

std::string run_args(const Pair& p, const std::string& images, const std::string& extra = "") {
  return "run -m " + q(p.model) + " --mmproj " + q(p.mmproj) + " " + images + " -p Describe -n 2 " + extra;
}

}  // namespace

TEST_SUITE("vision") {

TEST_CASE("ckjit run --image: the whole pipeline on a tiny pair / rows dumped in the peer's layout") {
  const Pair& p = pair();
  REQUIRE(fs::exists(p.mmproj));
  const fs::path dump = p.dir / "rows.f32";
  CliResult r = run_ckjit(run_args(p, "--image " + q(p.image("square-64.png")), "--report --dump-embd " + q(dump)));
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(r.output.find("bridge: image rows 1-") != std::string::npos);
  CHECK(r.output.find("phases: load") != std::string::npos);
  CHECK(r.output.find("image encode") != std::string::npos);
  // 64 x 64 -> 96 x 96 canvas (llama.cpp's minimum of 8 rows) -> 3 x 3 = 9 rows of 256 x (1 + 3).
  CHECK(r.output.find("9 rows") != std::string::npos);
  CHECK(fs::file_size(dump) == 9u * 256u * 4u * 4u);

  // Two images at markers inside a chat turn: two image segments, in order.
  CliResult two = run_ckjit("run -m " + q(p.model) + " --mmproj " + q(p.mmproj) + " --image " + q(p.image("wide-200x48.png")) +
                            " --image " + q(p.image("grey-96x80.png")) + " --chat -p 'A <__media__> and B <__media__>?' -n 1 --report");
  INFO(two.output);
  CHECK(two.status == 0);
  const size_t first = two.output.find("bridge: image rows"), second = two.output.find("bridge: image rows", first + 1);
  CHECK(first != std::string::npos);
  CHECK(second != std::string::npos);
  // Q8_0 mmproj: the same pipeline.
  synth_into("--preset tiny --seed 3 --mmproj-type q8_0 --name t8", p.dir);
  CliResult q8 = run_ckjit("run -m " + q(p.model) + " --mmproj " + q(p.dir / "mmproj-t8-q8_0.gguf") + " --image " +
                           q(p.image("tall-40x150.png")) + " -p x -n 1");
  INFO(q8.output);
  CHECK(q8.status == 0);
}

TEST_CASE("ckjit run --profile: every phase's ops / their rows / and the same text as without it") {
  const Pair& p = pair();
  const std::string args = "run -m " + q(p.model) + " --mmproj " + q(p.mmproj) + " --image " + q(p.image("square-64.png")) +
                           " -p Describe --temp 0 -n 4 --ignore-eos";
  CliResult plain = run_ckjit(args);
  CliResult prof = run_ckjit(args + " --profile");
  INFO(prof.output);
  REQUIRE(plain.status == 0);
  REQUIRE(prof.status == 0);
  // The generated text is the first line of stdout in both (stderr lines start with a word and ':').
  auto text_of = [](const std::string& out) {
    std::istringstream in(out);
    std::string line, text;
    while (std::getline(in, line))
      if (line.find(": ") == std::string::npos) text += line + "\n";
    return text;
  };
  CHECK(text_of(plain.output) == text_of(prof.output));
  for (const char* phase : {"encode", "image_prefill", "text_prefill", "decode"})
    CHECK(prof.output.find(std::string("profile-phase: ") + phase + " ") != std::string::npos);
  // 9 image rows (3 x 3 merged patches of a 96 x 96 canvas = 36 patches), 3 decode steps after the first token.
  CHECK(prof.output.find("profile-phase: image_prefill ms=") != std::string::npos);
  CHECK(prof.output.find("profile: image_prefill: ") != std::string::npos);
  CHECK(prof.output.find(" op calls, 9 rows") != std::string::npos);
  CHECK(prof.output.find(" op calls, 36 rows") != std::string::npos);
  CHECK(prof.output.find(" op calls, 3 rows") != std::string::npos);
  CHECK(prof.output.find("gate_up_swiglu") != std::string::npos);
  CHECK(prof.output.find("attention") != std::string::npos);
  CHECK(plain.output.find("profile-phase") == std::string::npos);
}

TEST_CASE("memory plan: run and serve and ocr refuse a plan over CKJIT_MEMORY_LIMIT before loading and name the figures and flags") {
  const Pair& p = pair();
  const std::string limit = "CKJIT_MEMORY_LIMIT=60M";
  CliResult r = run_ckjit(run_args(p, "--image " + q(p.image("square-64.png")), "-c 100000"), limit);
  INFO(r.output);
  CHECK(r.status != 0);
  for (const char* part : {"not enough memory", "one session", "-c 100000", "MiB needed, 60 MiB available (CKJIT_MEMORY_LIMIT=60M)", "lower -c"})
    CHECK(r.output.find(part) != std::string::npos);
  CHECK(r.output.find("timing:") == std::string::npos);  // nothing ran
  CHECK(run_ckjit(run_args(p, "--image " + q(p.image("square-64.png")), "-c 1024 --image-max-tokens 64"), limit).status == 0);  // a plan that fits

  CliResult s = run_ckjit("serve -m " + q(p.model) + " --mmproj " + q(p.mmproj) + " --port 0 --parallel 8 -c 32768", limit);
  INFO(s.output);
  CHECK(s.status != 0);
  for (const char* part : {"8 sessions", "n_ctx 32768", "--parallel n_sessions", "-c sets n_ctx"}) CHECK(s.output.find(part) != std::string::npos);
  CHECK(s.output.find("listening") == std::string::npos);

  CliResult o = run_ckjit("ocr -m " + q(p.model) + " --mmproj " + q(p.mmproj) + " --parallel 8 -c 32768 -o " + q(p.dir / "mem.jsonl") + " " +
                              q(p.image("square-64.png")),
                          limit);
  INFO(o.output);
  CHECK(o.status != 0);
  CHECK(o.output.find("8 sessions") != std::string::npos);
}

// The MiB a refused plan says it needs ("... N MiB needed, ..."), or -1.
double needed_mib(const std::string& out) {
  const size_t at = out.find(" MiB needed");
  if (at == std::string::npos) return -1;
  size_t b = at;
  while (b > 0 && (std::isdigit(static_cast<unsigned char>(out[b - 1])) || out[b - 1] == '.')) --b;
  return b < at ? std::stod(out.substr(b, at - b)) : -1;
}

TEST_CASE("memory plan: the largest image a session may encode (--image-max-tokens) is in the plan before loading / text only it is not") {
  const Pair& p = pair();
  const std::string img = "--image " + q(p.image("square-64.png"));
  // The figures a refused plan names (a 1 MiB limit refuses every plan).
  const CliResult big = run_ckjit(run_args(p, img, "-c 1024 --image-max-tokens 4096"), "CKJIT_MEMORY_LIMIT=1M");
  const CliResult small = run_ckjit(run_args(p, img, "-c 1024 --image-max-tokens 64"), "CKJIT_MEMORY_LIMIT=1M");
  INFO(big.output);
  INFO(small.output);
  CHECK(big.status != 0);
  for (const char* part : {"encode of an image of --image-max-tokens 4096 rows", "lower -c or --image-max-tokens"})
    CHECK(big.output.find(part) != std::string::npos);
  const double need_big = needed_mib(big.output), need_small = needed_mib(small.output);
  REQUIRE(need_small > 0);
  // 4,096 rows are 16,384 patches through the tower: far more than the weights and the KV cache here.
  REQUIRE(need_big > need_small + 20);
  const std::string between = "CKJIT_MEMORY_LIMIT=" + std::to_string(int((need_big + need_small) / 2)) + "M";
  const CliResult refused = run_ckjit(run_args(p, img, "-c 1024 --image-max-tokens 4096"), between);
  CHECK(refused.status != 0);
  CHECK(refused.output.find("timing:") == std::string::npos);  // refused before anything ran
  const CliResult ran = run_ckjit(run_args(p, img, "-c 1024 --image-max-tokens 64"), between);
  INFO(ran.output);
  CHECK(ran.status == 0);
  // Text only, no image counted: the same limit holds the weights and the KV cache.
  const CliResult text = run_ckjit("run -m " + q(p.model) + " -p hello -n 2 -c 1024 --image-max-tokens 4096", between);
  INFO(text.output);
  CHECK(text.status == 0);
  // serve: each of its sessions may encode such an image at once.
  const CliResult s2 = run_ckjit("serve -m " + q(p.model) + " --mmproj " + q(p.mmproj) + " --port 0 --parallel 2 -c 1024 --image-max-tokens 4096",
                                 "CKJIT_MEMORY_LIMIT=1M");
  INFO(s2.output);
  CHECK(s2.status != 0);
  CHECK(s2.output.find("2 sessions") != std::string::npos);
  CHECK(s2.output.find("image of image_max_tokens 4096 rows") != std::string::npos);  // the C API's names, serve's flags after
  CHECK(needed_mib(s2.output) > 2 * (need_big - need_small));
}

TEST_CASE("ckjit run --image: bad input gives a clear message and a non-zero exit") {
  const Pair& p = pair();
  auto expect = [&](const std::string& args, const std::string& message) {
    CliResult r = run_ckjit(args);
    INFO(args);
    INFO(r.output);
    CHECK(r.status > 0);  // exited, not crashed
    CHECK(r.output.find(message) != std::string::npos);
  };
  SUBCASE("a truncated PNG") {
    std::vector<char> b = bytes_of(p.image("square-64.png"));
    b.resize(b.size() / 2);
    write(p.dir / "cut.png", b);
    expect(run_args(p, "--image " + q(p.dir / "cut.png")), "cut.png");
  }
  SUBCASE("a corrupt file") {
    write(p.dir / "junk.jpg", std::vector<char>(100, 'x'));
    expect(run_args(p, "--image " + q(p.dir / "junk.jpg")), "junk.jpg: text, which ckjit does not read");
  }
  SUBCASE("a 1 x 1 image") {
    // A 24-bit BMP with one pixel.
    std::vector<char> b = {'B', 'M', 58, 0, 0, 0, 0, 0, 0, 0, 54, 0, 0, 0, 40, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0, 24, 0,
                           0, 0, 0, 0, 4, 0, 0, 0, 0x13, 0x0b, 0, 0, 0x13, 0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 20, 30, 0};
    write(p.dir / "dot.bmp", b);
    expect(run_args(p, "--image " + q(p.dir / "dot.bmp")), "dot.bmp: the image is 1 x 1 pixels, too small");
  }
  SUBCASE("a header claiming 30000 x 30000") {
    std::vector<char> b = bytes_of(p.image("square-64.png"));
    const char be[4] = {0, 0, char(0x75), char(0x30)};  // 30000 big-endian
    std::copy(be, be + 4, b.begin() + 16);
    std::copy(be, be + 4, b.begin() + 20);
    write(p.dir / "bomb.png", b);
    expect(run_args(p, "--image " + q(p.dir / "bomb.png")), "claims 30000 x 30000");
  }
  SUBCASE("a missing image") { expect(run_args(p, "--image " + q(p.dir / "none.png")), "none.png"); }
  SUBCASE("an unknown vision precision") {
    expect(run_args(p, "--image " + q(p.image("square-64.png")), "--vision-precision bf8"), "unknown vision precision 'bf8' (f32, int8 or bf16)");
  }
  SUBCASE("an mmproj of another architecture") {
    expect("run -m " + q(p.model) + " --mmproj " + q(p.model) + " --image " + q(p.image("square-64.png")) + " -p x",
           "is not an mmproj");
  }
  SUBCASE("an mmproj whose rows do not fit the text model") {
    expect("run -m " + q(p.model) + " --mmproj " + q(p.other_mmproj) + " --image " + q(p.image("square-64.png")) + " -p x",
           "belongs to another model");
  }
  SUBCASE("more image rows than the context") {
    expect(run_args(p, "--image " + q(p.image("square-64.png")), "-c 8"), "more than the context");
  }
  SUBCASE("more markers than images") {
    expect("run -m " + q(p.model) + " --mmproj " + q(p.mmproj) + " --image " + q(p.image("square-64.png")) +
               " -p 'a <__media__> b <__media__>'",
           "markers for 1 images");
  }
  SUBCASE("a bad token budget") {
    expect(run_args(p, "--image " + q(p.image("square-64.png")), "--image-min-tokens 50 --image-max-tokens 10"),
           "--image-min-tokens");
  }
}

}  // TEST_SUITE
