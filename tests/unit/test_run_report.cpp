// `ckjit run --report DIR`: the file writers on a hand-made report (one ops.csv row per recorded
// call, every column), then the CLI on the tiny synthesized pair: every file written, one ops.csv
// row per executed op, every tensor in dtypes.csv, the same text with and without --report, and
// an unwritable DIR reported clearly after a run that still prints its text. Suite "slow": the
// page rendered by headless Chromium (chart, tables, no console message, no horizontal overflow at
// 1280 px), its screenshot kept under build/test-artifacts/.
#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "runtime/gguf/gguf_reader.h"
#include "runtime/op_profile.h"
#include "tests/unit/cli_run.h"
#include "tests/unit/skip.h"
#include "tools/report/run_report.h"
#include "tests/unit/process_temp_dir.h"
#include "tests/unit/synth_cache.h"

namespace fs = std::filesystem;
using namespace ckjit;

namespace {

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

struct TinyPair {
  fs::path dir, model, mmproj;
  fs::path image() const { return fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / "square-64.png"; }
};

const TinyPair& tiny_pair() {
  static TinyPair p = [] {
    TinyPair x;
    x.dir = ckjit::test::process_temp_dir("ckjit_report_");
    fs::create_directories(x.dir);
    synth_into("--preset tiny --seed 3 --name t", x.dir);
    x.model = x.dir / "t-Q4_K_M.gguf", x.mmproj = x.dir / "mmproj-t-f16.gguf";
    return x;
  }();
  return p;
}

// The CLI with stdout (the generated text) into `out` and stderr captured.
CliResult run_text_to(const std::string& args, const fs::path& out) {
  return run_shell("{ '" CKJIT_BINARY_PATH "' " + args + " > " + q(out) + "; }");
}

std::string image_run(const TinyPair& p, const std::string& extra) {
  return "run -m " + q(p.model) + " --mmproj " + q(p.mmproj) + " --image " + q(p.image()) + " -p Describe -n 3 " + extra;
}

// Sum of "profile: PHASE: X ms in N op calls" over the phases --profile prints.
long long profiled_calls(const std::string& out) {
  long long n = 0;
  for (const auto& l : lines_of(out)) {
    const size_t at = l.find(" ms in ");
    if (l.rfind("profile: ", 0) == 0 && at != std::string::npos) n += std::stoll(l.substr(at + 7));
  }
  return n;
}

}  // namespace

// (No commas in the test names: CTest would lose their labels.)
TEST_SUITE("report") {

TEST_CASE("report writers: one ops.csv row per recorded call with every column and the dtype and bridge files") {
  OpProfile prof;
  prof.keep_calls(16);
  const OpDesc q{1024, 256, "Q4_K", "Q8_K", "jit gemm avx2 spec,with,commas", "jit gemv avx2 x"};
  const OpDesc v{512, 256, "Q6_K", "Q8_K", "jit gemm avx2 y", "vec_dot"};
  prof.set_phase(Phase::text_prefill);
  prof.add("qkv", 0, 2.0, {1e9, 1e6}, OpCall{7, {&q, &v, &v}});
  prof.add("norm", 0, 0.1, {}, OpCall{7});
  prof.set_phase(Phase::decode);
  prof.add("qkv", 0, 1.0, {1e6, 1e6}, OpCall{1, {&q}});
  report::RunReport r;
  r.machine_name = "test machine, 2 cores";
  r.machine_json = "{\"x\":1}";
  r.threads = 2;
  r.profile = &prof;
  r.peaks = {true, 100, 50, 10, 2, 1, "test"};
  r.tensors = {{"model", "blk.0.attn_q.weight", "Q4_K", "Q8_K activations", "jit gemm"}, {"model", "output_norm.weight", "F32", "f32", "rms_norm"}};
  r.bridge.segments.push_back({false, 0, 7, {0, 0, 0}, {6, 6, 6}, 0, 0});
  const auto rows = lines_of(report::ops_csv(r));
  REQUIRE(rows.size() == 1 + prof.calls().size());
  CHECK(rows[0] == "phase,layer,op,M,N,K,weight_type,input_type,kernel,threads,ms,gmacs,weight_gbs,peak,pct_of_peak");
  INFO(rows[1]);
  CHECK(rows[1].rfind("text_prefill,0,\"qkv\",7,\"1024+512+512\",\"256\",\"Q4_K+Q6_K+Q6_K\",\"Q8_K\",\"jit gemm avx2 spec,with,commas | jit gemm avx2 y\",2,2.0000,500.000,0.500,\"int8 100.0 GMAC/s\",500.0", 0) == 0);
  CHECK(rows[2].find("\"norm\",7,\"\",\"\"") != std::string::npos);
  CHECK(rows[3].find("\"jit gemv avx2 x\"") != std::string::npos);  // M = 1: the decode kernel
  CHECK(rows[3].find("\"DRAM 10.0 GB/s\",10.0") != std::string::npos);  // 1 GB/s of 10: nearer the DRAM bound
  const auto dt = lines_of(report::dtypes_csv(r));
  CHECK(dt.size() == 3);
  CHECK(report::machine_json(r).find("\"machine\":{\"x\":1}") != std::string::npos);
  CHECK(report::bridge_json(r).find("\"kind\":\"text\"") != std::string::npos);
  CHECK(report::phases_json(r).find("\"profiled\"") != std::string::npos);
  const std::string html = report::report_html(r);
  CHECK(html.find("<svg") != std::string::npos);
  CHECK(html.find("http") == std::string::npos);  // nothing fetched
}

TEST_CASE("report dir: a path that cannot be a directory is refused with the reason") {
  const fs::path file = fs::temp_directory_path() / ("ckjit_report_file_" + std::to_string(::getpid()));
  std::ofstream(file) << "x";
  CHECK(report::check_report_dir(file.string()).find("not a directory") != std::string::npos);
  CHECK(report::check_report_dir((file / "sub").string()).find("cannot create") != std::string::npos);
  fs::remove(file);
}

TEST_CASE("ckjit run --report DIR: every file and one ops.csv row per executed op and every tensor and the same text") {
  const TinyPair& p = tiny_pair();
  REQUIRE(fs::exists(p.mmproj));
  const fs::path dir = p.dir / "report";
  const fs::path out_plain = p.dir / "plain.txt", out_report = p.dir / "report.txt";
  CliResult plain = run_text_to(image_run(p, ""), out_plain);
  REQUIRE(plain.status == 0);
  CliResult r = run_text_to(image_run(p, "--profile --report " + q(dir)), out_report);
  INFO(r.output);
  REQUIRE(r.status == 0);
  CHECK(slurp(out_plain) == slurp(out_report));  // the report changes nothing the run prints
  CHECK(!slurp(out_plain).empty());
  for (const char* f : {"machine.json", "phases.json", "ops.csv", "dtypes.csv", "bridge.json", "report.html"}) CHECK(fs::exists(dir / f));
  CHECK(r.output.find("bridge: image rows") != std::string::npos);  // --report still prints the layout

  const auto ops = lines_of(slurp(dir / "ops.csv"));
  REQUIRE(ops.size() > 1);
  CHECK(ops[0] == "phase,layer,op,M,N,K,weight_type,input_type,kernel,threads,ms,gmacs,weight_gbs,peak,pct_of_peak");
  CHECK((long long)(ops.size() - 1) == profiled_calls(r.output));
  std::set<std::string> phases;
  for (size_t i = 1; i < ops.size(); ++i) phases.insert(ops[i].substr(0, ops[i].find(',')));
  CHECK(phases == std::set<std::string>{"encode", "image_prefill", "text_prefill", "decode"});
  const std::string csv = slurp(dir / "ops.csv");
  CHECK(csv.find("\"Q8_K\"") != std::string::npos);         // decoder weights consume Q8_K rows
  CHECK(csv.find("jit dense avx") != std::string::npos);    // the vision tower's kernels (avx2 or avx512)
  CHECK(csv.find("GMAC/s\"") != std::string::npos);         // judged against a measured peak

  // Every tensor of both files, by name.
  const std::string dt = slurp(dir / "dtypes.csv");
  for (const fs::path& f : {p.model, p.mmproj}) {
    const auto g = gguf::GgufFile::open(f.string());
    for (const auto& t : g.tensors()) CHECK_MESSAGE(dt.find("\"" + std::string(t.name) + "\"") != std::string::npos, t.name);
  }
  const std::string bridge = slurp(dir / "bridge.json");
  CHECK(bridge.find("\"kind\":\"image\"") != std::string::npos);
  CHECK(bridge.find("\"grid\":{\"w\":3,\"h\":3}") != std::string::npos);
  CHECK(bridge.find("\"deepstack_slices\":3") != std::string::npos);
  const std::string ph = slurp(dir / "phases.json");
  for (const char* name : {"load", "repack", "jit", "image_encode", "image_prefill", "text_prefill", "decode"})
    CHECK(ph.find(std::string("\"name\":\"") + name + "\"") != std::string::npos);
  CHECK(slurp(dir / "machine.json").find("\"name\":\"") != std::string::npos);
}

// The fields of one CSV line (double quotes hold commas; "" is a quote).
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (c == '"' && quoted && i + 1 < line.size() && line[i + 1] == '"') out.back() += '"', ++i;
    else if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

TEST_CASE("ckjit run --report DIR: the kernel of every decoder op at 1 and 8 and 512 rows is one that -v names for that weight") {
  const TinyPair& p = tiny_pair();
  const fs::path dir = p.dir / "report-kernels";
  // A prompt of 512 + 8 tokens in chunks of 512 (-b 512): a 512-row and an 8-row prefill call, then
  // one-row decode steps. "word" repeated is one token each after the first.
  std::string prompt = "word";
  for (int i = 1; i < 520; ++i) prompt += " word";
  CliResult r = run_text_to("run -m " + q(p.model) + " -p '" + prompt + "' -n 3 -b 512 -c 1024 --ignore-eos -v --report " + q(dir),
                            p.dir / "kernels.txt");
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto ops = lines_of(slurp(dir / "ops.csv"));
  REQUIRE(ops.size() > 1);
  const auto head = csv_fields(ops[0]);
  const size_t col_m = size_t(std::find(head.begin(), head.end(), "M") - head.begin());
  const size_t col_kernel = size_t(std::find(head.begin(), head.end(), "kernel") - head.begin());
  const size_t col_op = size_t(std::find(head.begin(), head.end(), "op") - head.begin());
  REQUIRE(col_kernel < head.size());
  std::set<std::string> seen;  // "op@M"
  for (size_t i = 1; i < ops.size(); ++i) {
    const auto f = csv_fields(ops[i]);
    REQUIRE(f.size() == head.size());
    const std::string& op = f[col_op];
    if (op != "qkv" && op != "out_proj" && op != "gate_up_swiglu" && op != "down" && op != "lm_head") continue;
    const std::string& m = f[col_m];
    if (m != "1" && m != "8" && m != "512") continue;
    seen.insert(op + "@" + m);
    CAPTURE(ops[i]);
    // Each kernel of the call (a group's are joined by " | ", a pair's by "; "): a generated one
    // is named by its spec, which -v prints in that weight's line; llama.cpp's vec_dot order by
    // its copy; a few-row call (where AVX-512 runs) by the prefetching few-row kernel.
    const std::string& k = f[col_kernel];
    for (size_t at = k.find("op="); at != std::string::npos; at = k.find("op=", at + 1)) {
      const std::string spec = k.substr(at, k.find_first_of(" ;|", at) - at);
      CHECK_MESSAGE(r.output.find(spec) != std::string::npos, "ops.csv names " << spec << " at M = " << m << ", which -v does not");
      if (m == "8" && spec.find("isa=avx512") != std::string::npos) CHECK(spec.find("pf=8") != std::string::npos);
    }
    if (k.find("vec_dot") != std::string::npos) CHECK(r.output.find("vec_dot") != std::string::npos);
    const bool named = k.find("op=") != std::string::npos || k.find("vec_dot") != std::string::npos;
    CHECK(named);
  }
  for (const char* op : {"qkv", "out_proj", "gate_up_swiglu", "down"})
    for (const char* m : {"1", "8", "512"}) CHECK_MESSAGE(seen.count(std::string(op) + "@" + m), op << " was not called at M = " << m);
}

TEST_CASE("ckjit run --report on an unwritable DIR: the text is printed with a clear error and a non-zero exit") {
  const TinyPair& p = tiny_pair();
  REQUIRE(fs::exists(p.model));
  const fs::path blocker = p.dir / "a-file";
  std::ofstream(blocker) << "x";
  const fs::path out = p.dir / "unwritable.txt", plain = p.dir / "text-plain.txt";
  REQUIRE(run_text_to("run -m " + q(p.model) + " -p Hello -n 3", plain).status == 0);
  CliResult r = run_text_to("run -m " + q(p.model) + " -p Hello -n 3 --report " + q(blocker / "sub"), out);
  INFO(r.output);
  CHECK(r.status != 0);
  CHECK(r.output.find("error: --report cannot create the directory") != std::string::npos);
  CHECK(r.output.find("no report written") != std::string::npos);
  CHECK(slurp(out) == slurp(plain));  // the run itself is not lost
}

}  // TEST_SUITE

TEST_SUITE("slow") {

TEST_CASE("report.html renders in headless Chromium: chart and tables without console messages or overflow at 1280 px") {
  const char* chromium = "/usr/bin/chromium";
  if (!fs::exists(chromium)) CKJIT_SKIP("chromium is not installed (tools/setup.sh installs it)");
  const TinyPair& p = tiny_pair();
  REQUIRE(fs::exists(p.mmproj));
  const fs::path dir = p.dir / "browser";
  REQUIRE(run_ckjit(image_run(p, "--report " + q(dir))).status == 0);
  const fs::path page = dir / "report.html";
  const fs::path artifacts = fs::path(CKJIT_BUILD_DIR) / "test-artifacts";
  fs::create_directories(artifacts);
  const fs::path shot = artifacts / "report.png";
  fs::remove(shot);
  const std::string flags = " --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --window-size=1280,2000 ";
  const std::string url = " 'file://" + page.string() + "'";
  // A fresh profile per call: the browser never reads or writes the user's.
  const std::string profile = " --user-data-dir=" + q(p.dir / "chromium-profile");
  const CliResult dom = run_shell(std::string("timeout 120 ") + chromium + flags + profile + " --dump-dom" + url);
  INFO(dom.output.substr(0, 4000));
  REQUIRE(dom.status == 0);
  CHECK(dom.output.find("<svg class=\"bars\" id=\"ops-encode\"") != std::string::npos);
  CHECK(dom.output.find("class=\"op-bar\"") != std::string::npos);
  CHECK(dom.output.find("id=\"dtype-table\"") != std::string::npos);
  CHECK(dom.output.find("class=\"dtype-row\"") != std::string::npos);
  CHECK(dom.output.find("id=\"bridge-table\"") != std::string::npos);
  CHECK(dom.output.find("class=\"bridge-row\"") != std::string::npos);
  // Chromium 156 logs every console message and uncaught exception on stderr as
  // "[pid:tid:time:INFO:CONSOLE:line] "message", source: URL (line)"; the page logs none.
  CHECK(dom.output.find(":CONSOLE") == std::string::npos);
  const size_t at = dom.output.find("data-scroll-width=\"");
  REQUIRE(at != std::string::npos);
  const int scroll_width = std::stoi(dom.output.substr(at + 19));
  CHECK(scroll_width <= 1280);
  CHECK(scroll_width > 0);
  const CliResult png = run_shell(std::string("timeout 120 ") + chromium + flags + profile + " --screenshot=" + q(shot) + url);
  INFO(png.output.substr(0, 2000));
  CHECK(png.status == 0);
  CHECK(png.output.find(":CONSOLE") == std::string::npos);
  REQUIRE(fs::exists(shot));
  CHECK(fs::file_size(shot) > 10000);
  MESSAGE("report screenshot: " << shot.string());
}

}  // TEST_SUITE
