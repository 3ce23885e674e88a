// `ckjit ocr` end to end on a synthesized tiny pair: a folder of images and PDFs with broken,
// encrypted and oversized pages and a file that is no page (error records, the rest done), resume after a killed run, the
// shards' union equal to the whole run, --merge, the Slurm array script, and bad flags (exit 2).
// The weights are random: the text is only compared between runs (same model, seed, threads:
// bit-identical by ckjit's numerical contract), never to expected words.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <thread>
#include <set>
#include <sstream>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "runtime/image/image.h"
#include "tests/unit/cli_run.h"
#include "tests/unit/image_writers.h"
#include "tests/unit/ocr_test_files.h"
#include "tests/unit/skip.h"
#include "tests/unit/synth_cache.h"
#include "tools/ocr/pdf.h"
#include "tools/ocr/runner.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string q(const fs::path& p) { return "'" + p.string() + "'"; }

size_t count_of(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t i = s.find(what); i != std::string::npos; i = s.find(what, i + 1)) ++n;
  return n;
}

std::vector<json> records(const fs::path& p) {
  std::vector<json> out;
  std::string all = ocr_test::read_file(p), line;
  for (char c : all) {
    if (c != '\n') { line += c; continue; }
    out.push_back(json::parse(line));
    line.clear();
  }
  REQUIRE(line.empty());  // every record ends its line
  return out;
}

// "source\npage" -> the record without its timings (which vary run to run).
std::map<std::string, json> by_page(const std::vector<json>& recs) {
  std::map<std::string, json> m;
  for (json r : recs) {
    r.erase("timings");
    const std::string key = r["source"].get<std::string>() + "\n" + std::to_string(r["page"].get<int>());
    CHECK_MESSAGE(m.count(key) == 0, "page recorded twice: " << key);
    m[key] = r;
  }
  return m;
}

// The tiny pair and a document set: 4 image files (one broken), a 3-page PDF whose page 2 is too
// large to rasterize, a broken PDF, an encrypted one and a text file: 10 pages, 5 of them failing
// (the text file's error record names it as text).
struct Corpus {
  fs::path dir, model, mmproj, docs;
  std::string common;  // the model flags every run shares
  fs::path out(const std::string& name) const { return dir / name; }
};

const Corpus& corpus() {
  static Corpus c = [] {
    Corpus x;
    x.dir = fs::temp_directory_path() / ("ckjit_ocr_cli_" + std::to_string(::getpid()));
    fs::remove_all(x.dir);
    fs::create_directories(x.dir);
    struct RemoveAtExit {
      fs::path p;
      ~RemoveAtExit() {
        std::error_code ec;
        fs::remove_all(p, ec);
      }
    };
    static RemoveAtExit cleanup{x.dir};
    synth_into("--preset tiny --seed 3 --name t", x.dir);
    x.model = x.dir / "t-Q4_K_M.gguf", x.mmproj = x.dir / "mmproj-t-f16.gguf";
    x.docs = x.dir / "docs";
    const fs::path img = fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images";
    fs::create_directories(x.docs / "a" / "b");
    fs::copy_file(img / "square-64.png", x.docs / "a" / "square.png");
    fs::copy_file(img / "grey-96x80.png", x.docs / "a" / "b" / "grey.png");
    fs::copy_file(img / "wide-200x48.png", x.docs / "wide.png");
    ocr_test::write_file(x.docs / "broken.png", std::string("\x89PNG\r\n\x1a\n", 8) + "cut short");
    ocr_test::write_file(x.docs / "notes.txt", "not a page");
    ocr_test::write_file(x.docs / "doc.pdf", ocr_test::make_pdf({{120, 90}, {100000, 100000}, {80, 60}}));
    ocr_test::write_file(x.docs / "broken.pdf", ocr_test::broken_pdf());
    ocr_test::write_file(x.docs / "locked.pdf", ocr_test::make_pdf({{120, 90}}, true));
    x.common = "-m " + q(x.model) + " --mmproj " + q(x.mmproj) + " -n 3 -t 1 --dpi 72 -p 'Read the page.'";
    return x;
  }();
  return c;
}

const size_t kPages = 10, kFailing = 5;

// The whole set in one run: the reference the other cases compare with.
const std::vector<json>& full_run() {
  static std::vector<json> recs = [] {
    const Corpus& c = corpus();
    CliResult r = run_ckjit("ocr " + c.common + " -o " + q(c.out("full.jsonl")) + " " + q(c.docs));
    INFO(r.output);
    CHECK(r.status == 1);  // some pages failed
    return records(c.out("full.jsonl"));
  }();
  return recs;
}

}  // namespace

TEST_SUITE("ocr") {

TEST_CASE("ckjit ocr: a folder of images and PDFs / one record per page in order / bad pages are error records") {
  const Corpus& c = corpus();
  REQUIRE(fs::exists(c.mmproj));
  const fs::path out = c.out("first.jsonl");
  CliResult r = run_ckjit("ocr " + c.common + " -o " + q(out) + " " + q(c.docs));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("8 documents (1 not an image or PDF: an error record each), 10 pages; 0 already in") != std::string::npos);
  CHECK(count_of(r.output, "ocr: ") >= kPages);
  CHECK(count_of(r.output, " ok in ") == kPages - kFailing);  // a plain line per page off a terminal
  CHECK(count_of(r.output, " FAILED in ") == kFailing);
  CHECK(r.output.find("10/10 pages") != std::string::npos);
  CHECK(r.output.find("ETA") != std::string::npos);
  CHECK(r.output.find("10 pages done (5 failed), 0 skipped") != std::string::npos);

  const auto recs = records(out);
  REQUIRE(recs.size() == kPages);
  std::vector<std::string> order;
  for (const auto& j : recs) order.push_back(fs::relative(j["source"].get<std::string>(), c.docs).string() + "#" +
                                             std::to_string(j["page"].get<int>()));
  CHECK(order == std::vector<std::string>{"a/b/grey.png#1", "a/square.png#1", "broken.pdf#1", "broken.png#1", "doc.pdf#1",
                                          "doc.pdf#2", "doc.pdf#3", "locked.pdf#1", "notes.txt#1", "wide.png#1"});
  std::map<std::string, std::string> errors;
  for (const auto& j : recs) {
    if (j.contains("error")) {
      errors[order[size_t(&j - &recs[0])]] = j["error"];
      CHECK_FALSE(j.contains("text"));
      continue;
    }
    CHECK(j["text"].is_string());
    CHECK(j["tokens"].get<int>() >= 1);
    CHECK(j["tokens"].get<int>() <= 3);
    for (const char* k : {"render_ms", "encode_ms", "prefill_ms", "decode_ms", "n_image_rows"}) CHECK(j["timings"].contains(k));
    CHECK(j["timings"]["n_image_rows"].get<int>() >= 8);  // the page went through the vision tower
    CHECK(j["timings"]["encode_ms"].get<double>() > 0);
  }
  REQUIRE(errors.size() == kFailing);
  CHECK(errors["broken.png#1"].find("broken.png") != std::string::npos);
  CHECK(errors["broken.pdf#1"].find("cannot open as a PDF") != std::string::npos);
  CHECK(errors["locked.pdf#1"].find("encrypted") != std::string::npos);
  CHECK(errors["doc.pdf#2"].find("lower --dpi") != std::string::npos);
  CAPTURE(errors["notes.txt#1"]);
  CHECK(errors["notes.txt#1"].find("notes.txt: text, which ckjit ocr does not read") != std::string::npos);
  CHECK(recs[4]["timings"]["render_ms"].get<double>() > 0);  // doc.pdf p1 was rasterized

  // Deterministic: the same pages give the same text in another run.
  CHECK(by_page(recs) == by_page(full_run()));
  // All recorded: a rerun does nothing, says so, and keeps the failure in its exit status.
  const std::string before = ocr_test::read_file(out);
  CliResult again = run_ckjit("ocr " + c.common + " -o " + q(out) + " " + q(c.docs));
  INFO(again.output);
  CHECK(again.status == 1);
  CHECK(again.output.find("10 already in") != std::string::npos);
  CHECK(again.output.find("0 pages done (0 failed), 10 skipped") != std::string::npos);
  CHECK(again.output.find("5 failed before") != std::string::npos);
  CHECK(ocr_test::read_file(out) == before);
}

TEST_CASE("ckjit ocr --parallel: pages generated together give the records of one at a time / in page order") {
  const Corpus& c = corpus();
  for (int np : {2, 4}) {
    CAPTURE(np);
    const fs::path out = c.out("parallel" + std::to_string(np) + ".jsonl");
    CliResult r = run_ckjit("ocr " + c.common + " --parallel " + std::to_string(np) + " -o " + q(out) + " " + q(c.docs));
    INFO(r.output);
    CHECK(r.status == 1);
    CHECK(r.output.find("10 pages done (5 failed), 0 skipped") != std::string::npos);
    const auto recs = records(out);
    REQUIRE(recs.size() == kPages);
    for (size_t i = 0; i < kPages; ++i) CHECK(recs[i]["source"] == full_run()[i]["source"]);  // journal order kept
    CHECK(by_page(recs) == by_page(full_run()));  // the same text, tokens and errors
  }
  // --ignore-eos: every page that reads generates exactly -n tokens.
  const fs::path out = c.out("ignore-eos.jsonl");
  CliResult r = run_ckjit("ocr " + c.common + " --parallel 3 --ignore-eos -o " + q(out) + " " + q(c.docs));
  INFO(r.output);
  for (const auto& j : records(out))
    if (!j.contains("error")) CHECK(j["tokens"].get<int>() == 3);
}

TEST_CASE("ckjit ocr records: the page's pixels and a PDF page's DPI and the image rows and why the text ended") {
  std::map<std::string, std::pair<int, int>> sizes;
  for (const json& j : full_run()) {
    if (j.contains("error")) continue;
    const std::string name = fs::path(j["source"].get<std::string>()).filename().string() + "#" + std::to_string(j["page"].get<int>());
    sizes[name] = {j["width"].get<int>(), j["height"].get<int>()};
    CHECK(j["image_rows"].get<int>() > 0);
    CHECK(j["finish_reason"] == (j["tokens"].get<int>() == 3 ? "length" : "stop"));
    CHECK(j.contains("dpi") == (name.rfind("doc.pdf", 0) == 0));
    if (j.contains("dpi")) CHECK(j["dpi"].get<double>() == 72.0);
  }
  const std::map<std::string, std::pair<int, int>> want{
      {"square.png#1", {64, 64}}, {"grey.png#1", {96, 80}}, {"wide.png#1", {200, 48}}, {"doc.pdf#1", {120, 90}}, {"doc.pdf#3", {80, 60}}};
  CHECK(sizes == want);
}

TEST_CASE("ckjit ocr: a resume with another prompt or DPI is refused naming them unless --force-resume") {
  const Corpus& c = corpus();
  const fs::path out = c.out("settings.jsonl");
  const std::string base = "ocr -m " + q(c.model) + " --mmproj " + q(c.mmproj) + " -n 3 -t 1 -o " + q(out) + " ";
  CliResult first = run_ckjit(base + "--dpi 72 -p 'Read.' " + q(c.docs / "wide.png"));
  REQUIRE_MESSAGE(first.status == 0, first.output);
  CHECK(fs::exists(fs::path(out.string() + ".settings.json")));
  CliResult other = run_ckjit(base + "--dpi 96 -p 'Read it.' " + q(c.docs / "wide.png") + " " + q(c.docs / "a"));
  INFO(other.output);
  CHECK(other.status != 0);
  CHECK(other.output.find("prompt") != std::string::npos);
  CHECK(other.output.find("dpi") != std::string::npos);
  CHECK(other.output.find("--force-resume") != std::string::npos);
  CHECK(records(out).size() == 1);  // nothing added
  // The same settings resume; "./" and a folder's own path name the same page.
  CliResult same = run_ckjit(base + "--dpi 72 -p 'Read.' " + q(c.docs / "." / "wide.png") + " " + q(c.docs / "a"));
  INFO(same.output);
  CHECK(same.status == 0);
  CHECK(same.output.find("1 already in") != std::string::npos);
  CHECK(records(out).size() == 3);
  CliResult forced = run_ckjit(base + "--dpi 96 -p 'Read it.' --force-resume " + q(c.docs / "wide.png") + " " + q(c.docs / "doc.pdf"));
  INFO(forced.output);
  CHECK(forced.output.find("1 already in") != std::string::npos);  // wide.png is not done again
  CHECK(records(out).size() == 6);  // doc.pdf: 3 pages (one too large: an error record)
}

TEST_CASE("ckjit ocr --max-side: a PDF page's longest side is capped by a lower DPI that the record names") {
  const Corpus& c = corpus();
  const fs::path out = c.out("maxside.jsonl");
  // doc.pdf page 1 is 120 x 90 pt: 240 x 180 px at 144 dpi, capped to 100 px wide at 60 dpi.
  CliResult r = run_ckjit("ocr -m " + q(c.model) + " --mmproj " + q(c.mmproj) + " -n 3 -t 1 --dpi 144 --max-side 100 -o " + q(out) + " " +
                          q(c.docs / "doc.pdf") + " " + q(c.docs / "wide.png"));
  INFO(r.output);
  std::map<std::string, json> by;
  for (const json& j : records(out)) by[fs::path(j["source"].get<std::string>()).filename().string() + "#" + std::to_string(j["page"].get<int>())] = j;
  REQUIRE(by.count("doc.pdf#1"));
  CHECK(by["doc.pdf#1"]["dpi"].get<double>() == doctest::Approx(60.0));
  CHECK(by["doc.pdf#1"]["width"] == 100);
  CHECK(by["doc.pdf#1"]["height"] == 75);
  CHECK(by["doc.pdf#2"].contains("error") == false);  // the huge page now fits
  CHECK(by["wide.png#1"]["width"] == 200);              // images are not resized
}

TEST_CASE("ckjit ocr --format md: each page's text also in its own file beside the journal") {
  const Corpus& c = corpus();
  const fs::path dir = c.dir / "md";
  fs::create_directories(dir);
  const fs::path out = dir / "pages.jsonl";
  CliResult r = run_ckjit("ocr " + c.common + " --format md -o " + q(out) + " " + q(c.docs / "wide.png") + " " + q(c.docs / "doc.pdf"));
  INFO(r.output);
  int files = 0;
  for (const json& j : records(out)) {
    const std::string src = j["source"].get<std::string>();
    const bool pdf = src.size() > 4 && src.substr(src.size() - 4) == ".pdf";
    const fs::path p = ckjit::ocr::page_file_path(out.string(), src, j["page"].get<int>(), pdf, "md");
    CAPTURE(p);
    CHECK(p.parent_path() == dir);
    if (j.contains("error")) {
      CHECK_FALSE(fs::exists(p));
      continue;
    }
    ++files;
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    CHECK(ss.str() == j["text"].get<std::string>() + (j["text"].get<std::string>().empty() || j["text"].get<std::string>().back() != '\n' ? "\n" : ""));
  }
  CHECK(files == 3);
  CHECK(ckjit::ocr::page_file_path("/x/out.jsonl", "/data/a/b.pdf", 3, true, "md") == "/x/data_a_b.pdf-p3.md");
  CHECK(ckjit::ocr::page_file_path("out.jsonl", "./a.png", 1, false, "txt") == "a.png.txt");
}

TEST_CASE("ckjit ocr --grounding: the answer's 0-1000 boxes are in the record in page pixels") {
  const Corpus& c = corpus();
  const fs::path out = c.out("grounding.jsonl");
  const std::string schema = R"({"type":"array","minItems":1,"maxItems":2,"items":{"type":"object","properties":{
      "bbox_2d":{"type":"array","minItems":4,"maxItems":4,"items":{"type":"integer"}},"label":{"type":"string","maxLength":4}},
      "required":["bbox_2d","label"]}})";
  ocr_test::write_file(c.dir / "boxes.json", schema);
  CliResult r = run_ckjit("ocr -m " + q(c.model) + " --mmproj " + q(c.mmproj) + " -t 1 --dpi 72 -n 300 --temp 1 --grounding --json-schema-file " +
                          q(c.dir / "boxes.json") + " -o " + q(out) + " " + q(c.docs / "wide.png") + " " + q(c.docs / "doc.pdf"));
  INFO(r.output);
  int pages = 0;
  for (const json& j : records(out)) {
    if (j.contains("error")) continue;
    ++pages;
    CAPTURE(j.dump());
    REQUIRE(j["finish_reason"] == "stop");
    const json answer = json::parse(j["text"].get<std::string>());
    REQUIRE(j["boxes"].size() == answer.size());
    const double w = j["width"].get<double>(), h = j["height"].get<double>();
    for (size_t i = 0; i < answer.size(); ++i) {
      const json& b = j["boxes"][i];
      CHECK(b["label"] == answer[i]["label"]);
      CHECK(b["bbox_2d"] == answer[i]["bbox_2d"]);
      for (int k = 0; k < 4; ++k) {
        const double g = std::clamp(answer[i]["bbox_2d"][k].get<double>(), 0.0, 1000.0);
        CHECK(b["bbox_px"][k].get<double>() == doctest::Approx(g * (k % 2 ? h : w) / 1000.0));
      }
    }
  }
  CHECK(pages == 3);
}

TEST_CASE("ckjit ocr --json-schema: each page that reads is a JSON value of the schema") {
  const Corpus& c = corpus();
  const fs::path out = c.out("json.jsonl");
  const std::string schema = R"({"type":"object","properties":{"title":{"type":"string","maxLength":6},"n":{"type":"integer"}},"required":["title","n"]})";
  ocr_test::write_file(c.dir / "schema.json", schema);
  CliResult r = run_ckjit("ocr -m " + q(c.model) + " --mmproj " + q(c.mmproj) + " -t 1 --dpi 72 -n 200 --temp 1 --json-schema-file " + q(c.dir / "schema.json") + " -o " + q(out) + " " + q(c.docs));
  INFO(r.output);
  int read = 0;
  for (const auto& j : records(out)) {
    if (j.contains("error")) continue;
    ++read;
    const auto value = nlohmann::json::parse(j["text"].get<std::string>(), nullptr, false);
    CAPTURE(j["text"]);
    REQUIRE(value.is_object());
    CHECK(value["n"].is_number_integer());
    CHECK(value["title"].is_string());
  }
  CHECK(read == 5);
}

TEST_CASE("ckjit ocr: resume after a killed run / the cut line dropped and only the missing pages done") {
  const Corpus& c = corpus();
  const auto& full = full_run();
  REQUIRE(full.size() == kPages);
  // What a run killed while writing its fifth record leaves.
  const std::string all = ocr_test::read_file(c.out("full.jsonl"));
  size_t cut = 0;
  for (int i = 0; i < 4; ++i) cut = all.find('\n', cut) + 1;
  const fs::path out = c.out("resume.jsonl");
  ocr_test::write_file(out, all.substr(0, cut + 25));
  CliResult r = run_ckjit("ocr " + c.common + " -o " + q(out) + " " + q(c.docs));
  INFO(r.output);
  CHECK(r.status == 1);
  CHECK(r.output.find("removed an unfinished last line") != std::string::npos);
  CHECK(r.output.find("4 already in") != std::string::npos);
  CHECK(r.output.find("6 to do") != std::string::npos);
  CHECK(count_of(r.output, " ok in ") + count_of(r.output, " FAILED in ") == 6);  // pages not redone
  CHECK(r.output.find("6 pages done") != std::string::npos);
  const auto recs = records(out);
  CHECK(recs.size() == kPages);
  CHECK(by_page(recs) == by_page(full));
}

// Kills `ckjit ocr` (through `sh -c exec`, so the pid is ckjit's) after `after_s` seconds. Returns
// whether the kill hit a live process (it was still running and died of SIGKILL) and how many
// records the journal held at that moment.
struct Kill {
  bool hit = false;
  size_t records_before = 0;
};
Kill kill_after(const std::string& command, double after_s, const fs::path& journal, const fs::path& log) {
  Kill k;
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::FILE* f = std::fopen(log.c_str(), "w");
    if (f) ::dup2(::fileno(f), 1), ::dup2(::fileno(f), 2);
    ::execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  REQUIRE(pid > 0);
  std::this_thread::sleep_for(std::chrono::duration<double>(after_s));
  int st = 0;
  const bool alive = ::waitpid(pid, &st, WNOHANG) == 0;
  if (alive) {
    const std::string j = ocr_test::read_file(journal);
    k.records_before = size_t(std::count(j.begin(), j.end(), '\n'));
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
  }
  k.hit = alive && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL;
  return k;
}

// The --format md page files of a folder: name -> text.
std::map<std::string, std::string> page_files(const fs::path& dir) {
  std::map<std::string, std::string> m;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".md") m[e.path().filename().string()] = ocr_test::read_file(e.path());
  return m;
}

TEST_CASE("ckjit ocr: killed with SIGKILL at seeded random instants across a run then resumed gives every page and page file exactly once as an unkilled run does") {
  const Corpus& c = corpus();
  const auto& full = full_run();
  REQUIRE(full.size() == kPages);
  // The unkilled run with --format md (a page file beside the journal for each page): the reference
  // texts and files, and how long a whole run takes here (start-up, rendering, encode, decode,
  // journal writes with fsync, page files).
  auto run_in = [&](const fs::path& dir) {
    return "'" CKJIT_BINARY_PATH "' ocr " + c.common + " --format md -o " + q(dir / "out.jsonl") + " " + q(c.docs);
  };
  const fs::path ref = c.out("kill-ref");
  fs::create_directories(ref);
  const auto t0 = std::chrono::steady_clock::now();
  const CliResult whole_run = run_shell(run_in(ref));
  const double whole = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_MESSAGE(whole_run.status == 1, whole_run.output);  // the failing pages fail
  REQUIRE(by_page(records(ref / "out.jsonl")) == by_page(full));
  const auto ref_files = page_files(ref);
  REQUIRE(ref_files.size() == kPages - kFailing);
  // Seeded instants over the run (start-up to exit). A run here may end sooner than the one timed:
  // a draw that comes after its process has ended is not a kill, is not counted, and shortens the
  // span later draws come from; every kill counted hit a live process. CKJIT_OCR_KILLS /
  // CKJIT_OCR_KILL_SEED: more kills or another draw (perf/ocr_kills.sh runs 100).
  const char* n_env = std::getenv("CKJIT_OCR_KILLS");
  const char* seed_env = std::getenv("CKJIT_OCR_KILL_SEED");
  const int kills = n_env ? std::max(1, std::atoi(n_env)) : 8;
  const unsigned seed = seed_env ? unsigned(std::strtoul(seed_env, nullptr, 10)) : 47u;
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> at(0.0, 1.0);
  std::string report;
  double span = whole;
  int hits = 0, late = 0;
  for (int i = 0; hits < kills && i < 3 * kills; ++i) {
    const double t = at(rng) * span;
    const fs::path dir = c.out("kill-" + std::to_string(i));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const Kill k = kill_after(run_in(dir), t, dir / "out.jsonl", dir / "killed.log");
    INFO("seed " << seed << ", draw " << i << " at " << t << " s of a " << whole << " s run: " << ocr_test::read_file(dir / "killed.log"));
    if (!k.hit) {
      ++late, span = t;
      REQUIRE(by_page(records(dir / "out.jsonl")) == by_page(full));  // the run it came after is whole
      fs::remove_all(dir);
      continue;
    }
    ++hits;
    char line[96];
    std::snprintf(line, sizeof line, " %.2f s (%zu records)", t, k.records_before);
    report += line;
    const CliResult r = run_shell(run_in(dir));
    INFO("resume: " << r.output);
    CHECK(r.status == 1);  // the failing pages fail again; the rest is done
    const auto recs = records(dir / "out.jsonl");  // every line whole
    CHECK(recs.size() == kPages);
    CHECK(by_page(recs) == by_page(full));  // each page once (by_page checks), as the unkilled run
    CHECK(page_files(dir) == ref_files);    // each page file whole, with the unkilled run's text
    fs::remove_all(dir);
  }
  CHECK_MESSAGE(hits == kills, "only " << hits << " of " << kills << " kills hit a live ckjit ocr (" << late << " draws came after the run)");
  MESSAGE(hits << " kills (seed " << seed << ", " << late << " draws after a quicker run's end) in a " << whole
               << " s run, each at:" << report);
}

// Runs `command` (where the word MNT names the mount point) with a tmpfs of `size` mounted at
// `mnt`, in a mount namespace of its own (unshare -rm: root in a user namespace, where an
// unprivileged user may mount a tmpfs); copies what the job left there into `keep` afterwards.
CliResult with_small_disk(const fs::path& mnt, const std::string& size, const std::string& command, const fs::path& keep) {
  auto sh_quote = [](const std::string& s) {
    std::string o = "'";
    for (char ch : s) o += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    return o + "'";
  };
  return run_shell("unshare -rm sh -c " + sh_quote("mount -t tmpfs -o size=" + size + " ckjit-full " + q(mnt) + " || exit 90; " + command +
                                                   "; st=$?; cp -a " + q(mnt) + "/. " + q(keep) + "/ && exit $st"));
}

TEST_CASE("ckjit ocr: a journal on a small filesystem that fills mid-job stops naming the cause / no torn record / a resume on a larger disk does every page once") {
  const Corpus& c = corpus();
  const fs::path root = c.out("full-disk");
  fs::remove_all(root);
  fs::create_directories(root / "mnt");
  const CliResult probe = with_small_disk(root / "mnt", "4k", "true", root);
  if (probe.status != 0) CKJIT_SKIP("cannot mount a tmpfs here (unshare -rm, then mount -t tmpfs): " << probe.output);
  // 16 pages whose records (-n 40) take more than a 4 KiB tmpfs page together.
  const fs::path docs = root / "docs";
  fs::create_directories(docs);
  const fs::path img = fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images";
  for (int i = 0; i < 16; ++i)
    fs::copy_file(img / (i % 2 ? "square-64.png" : "grey-96x80.png"), docs / ("page" + std::to_string(10 + i) + ".png"));
  const std::string common = "-m " + q(c.model) + " --mmproj " + q(c.mmproj) + " -n 40 -t 1 -p 'Read the page.' ";
  auto ocr = [&](const fs::path& out, const std::string& extra) {
    return "'" CKJIT_BINARY_PATH "' ocr " + common + extra + " -o " + q(out) + " " + q(docs);
  };
  const fs::path ref = root / "ref";
  fs::create_directories(ref);
  const CliResult whole = run_shell(ocr(ref / "out.jsonl", "--format md"));
  REQUIRE_MESSAGE(whole.status == 0, whole.output);
  const auto ref_recs = by_page(records(ref / "out.jsonl"));
  REQUIRE(ref_recs.size() == 16);
  REQUIRE(fs::file_size(ref / "out.jsonl") > 4096 + 1024);
  const auto ref_files = page_files(ref);
  REQUIRE(ref_files.size() == 16);

  // Two 4 KiB pages: the settings file takes one, the journal gets the other; its append that needs
  // a third fails (ENOSPC). With --format md each page file takes a page of its own too (a 5-page disk).
  // Plain variables, not a structured binding: clang 14 cannot capture one in CAPTURE's lambda.
  for (const auto& disk : {std::pair<std::string, std::string>{"8k", ""}, {"20k", "--format md"}}) {
    const std::string size = disk.first, extra = disk.second;
    CAPTURE(extra);
    const fs::path kept = root / ("kept" + std::to_string(extra.size()));
    fs::remove_all(kept);
    fs::create_directories(kept);
    const CliResult r = with_small_disk(root / "mnt", size, ocr(root / "mnt" / "out.jsonl", extra), kept);
    INFO(r.output);
    CHECK(r.status != 0);
    CHECK(r.status != 90);  // mounted
    CHECK(r.output.find("No space left on device") != std::string::npos);
    CHECK(r.output.find("free some space, then run the same command again: it resumes") != std::string::npos);
    const auto part = records(kept / "out.jsonl");  // every line a whole record
    CHECK(part.size() > 0);
    CHECK(part.size() < 16);
    for (const auto& e : fs::directory_iterator(kept)) CHECK_MESSAGE(e.path().extension() != ".tmp", e.path());  // no half page file
    MESSAGE("a " << size << " tmpfs" << (extra.empty() ? "" : " with " + extra) << " filled after " << part.size() << " of 16 records");
    // The same command on a larger disk (the kept files moved there) resumes: every page once.
    const CliResult resumed = run_shell(ocr(kept / "out.jsonl", extra));
    INFO(resumed.output);
    CHECK(resumed.status == 0);
    CHECK(resumed.output.find(std::to_string(part.size()) + " already in") != std::string::npos);
    const auto recs = by_page(records(kept / "out.jsonl"));  // by_page: each page once
    CHECK(recs.size() == 16);
    auto texts = [](const std::map<std::string, json>& m) {
      std::map<std::string, json> t;
      for (const auto& [k, r] : m) t[fs::path(k).filename().string()] = r["text"];
      return t;
    };
    CHECK(texts(recs) == texts(ref_recs));
    if (!extra.empty()) CHECK(page_files(kept) == ref_files);
  }
  fs::remove_all(root);
}

TEST_CASE("ckjit ocr: a journal inside the input folder and hidden files are left out and counted and never pages") {
  const Corpus& c = corpus();
  const fs::path dir = c.out("inside");
  fs::create_directories(dir);
  fs::copy_file(fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / "square-64.png", dir / "square.png", fs::copy_options::overwrite_existing);
  ocr_test::write_file(dir / ".hidden", "x");
  const std::string run = "ocr " + c.common + " --format md -o " + q(dir / "out.jsonl") + " " + q(dir);
  CliResult first = run_ckjit(run);
  INFO(first.output);
  CHECK(first.status == 0);
  CliResult again = run_ckjit(run);  // now the folder holds out.jsonl, its settings and square.png.md
  INFO(again.output);
  CHECK(again.status == 0);
  CHECK(again.output.find("1 documents (left out: 1 hidden file, 3 of this run's own output files), 1 pages; 1 already in") != std::string::npos);
  CHECK(records(dir / "out.jsonl").size() == 1);
}

TEST_CASE("ckjit ocr: every page of a TIFF and a WebP (still / animated) are read / each page as the same pixels in a BMP reads") {
  const Corpus& c = corpus();
  const fs::path dir = c.out("tiff_webp"), same = c.out("tiff_webp_as_bmp");
  fs::create_directories(dir), fs::create_directories(same);
  const ckjit::image::Rgb8 sq = ckjit::image::load((fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images" / "square-64.png").string());
  const std::vector<uint8_t> other = image_test::pattern(48, 72, 9);
  ocr_test::write_file(dir / "scan.tiff", image_test::make_tiff({{sq.width, sq.height, sq.pixels, 5}, {48, 72, other, 8}}));
  ocr_test::write_file(dir / "photo.webp", image_test::make_webp_lossless(other, 48, 72));
  ocr_test::write_file(dir / "anim.webp", image_test::make_webp_animation({sq.pixels, other}, sq.width, sq.height));
  ocr_test::write_file(dir / "cut.tif", image_test::make_tiff({{sq.width, sq.height, sq.pixels, 1}}).substr(0, 300));
  // The same pages as BMPs: a page read from the TIFF or WebP is the page read from its pixels.
  auto bmp = [](const std::vector<uint8_t>& rgb, int w, int h) {
    std::vector<uint8_t> bgr(rgb.size());
    for (size_t i = 0; i < rgb.size(); i += 3) bgr[i] = rgb[i + 2], bgr[i + 1] = rgb[i + 1], bgr[i + 2] = rgb[i];
    const std::vector<uint8_t> b = ckjit::ocr::encode_bmp(bgr.data(), w, h, size_t(w) * 3);
    return std::string(b.begin(), b.end());
  };
  ocr_test::write_file(same / "square.bmp", bmp(sq.pixels, sq.width, sq.height));
  ocr_test::write_file(same / "other.bmp", bmp(other, 48, 72));

  CliResult r = run_ckjit("ocr " + c.common + " -o " + q(c.out("tiff_webp.jsonl")) + " " + q(dir));
  INFO(r.output);
  CHECK(r.status == 1);  // cut.tif fails
  CHECK(r.output.find("4 documents, 5 pages") != std::string::npos);
  CliResult b = run_ckjit("ocr " + c.common + " -o " + q(c.out("tiff_webp_as_bmp.jsonl")) + " " + q(same));
  INFO(b.output);
  CHECK(b.status == 0);
  std::map<std::string, json> got, want;
  for (const json& j : records(c.out("tiff_webp.jsonl"))) got[fs::path(j["source"].get<std::string>()).filename().string() + "#" + std::to_string(j["page"].get<int>())] = j;
  for (const json& j : records(c.out("tiff_webp_as_bmp.jsonl"))) want[fs::path(j["source"].get<std::string>()).filename().string()] = j;
  REQUIRE(got.size() == 5);
  REQUIRE(want.size() == 2);
  CHECK(got["cut.tif#1"]["error"].get<std::string>().find("cut.tif") != std::string::npos);
  for (const auto& page_bmp_ : std::vector<std::pair<std::string, std::string>>{
           {"scan.tiff#1", "square.bmp"}, {"scan.tiff#2", "other.bmp"}, {"photo.webp#1", "other.bmp"}, {"anim.webp#1", "square.bmp"}}) {
    const auto& page = page_bmp_.first;
    const auto& bmp_name = page_bmp_.second;
    CAPTURE(page);
    REQUIRE(got[page].contains("text"));
    CHECK(got[page]["text"] == want[bmp_name]["text"]);
    CHECK(got[page]["width"] == want[bmp_name]["width"]);
    CHECK(got[page]["height"] == want[bmp_name]["height"]);
    CHECK(got[page]["timings"]["n_image_rows"] == want[bmp_name]["timings"]["n_image_rows"]);
  }
}

TEST_CASE("ckjit ocr --retry-errors: a page that failed is done again once mended / its error record replaced") {
  const Corpus& c = corpus();
  const fs::path docs = c.out("retry-docs"), out = c.out("retry.jsonl");
  const fs::path img = fs::path(CKJIT_FIXTURES_DIR) / "vision" / "images";
  fs::create_directories(docs);
  fs::copy_file(img / "square-64.png", docs / "a.png");
  ocr_test::write_file(docs / "b.png", "not an image at all");
  const std::string cmd = "ocr " + c.common + " -o " + q(out) + " " + q(docs);
  CliResult first = run_ckjit(cmd);
  INFO(first.output);
  CHECK(first.status == 1);
  REQUIRE(records(out).size() == 2);
  CHECK(records(out)[1].contains("error"));

  fs::remove(docs / "b.png");
  fs::copy_file(img / "grey-96x80.png", docs / "b.png");  // mended
  CliResult skip = run_ckjit(cmd);  // without the flag the error stands
  INFO(skip.output);
  CHECK(skip.status == 1);
  CHECK(skip.output.find("0 pages done (0 failed), 2 skipped") != std::string::npos);
  CHECK(records(out).size() == 2);

  CliResult retry = run_ckjit(cmd + " --retry-errors");
  INFO(retry.output);
  CHECK(retry.status == 0);
  CHECK(retry.output.find("1 already in") != std::string::npos);
  CHECK(retry.output.find("1 failed before (retried); 1 to do") != std::string::npos);
  CHECK(retry.output.find("1 pages done (0 failed)") != std::string::npos);
  const auto recs = records(out);
  REQUIRE(recs.size() == 2);  // one record per page, the error gone
  const auto pages = by_page(recs);
  for (const auto& [key, rec] : pages) CHECK_FALSE(rec.contains("error"));
  CHECK(recs[1]["source"].get<std::string>().find("b.png") != std::string::npos);
  CHECK(recs[1]["tokens"].get<int>() >= 1);
  // Nothing failed now: a rerun with the flag has nothing to do.
  CliResult again = run_ckjit(cmd + " --retry-errors");
  INFO(again.output);
  CHECK(again.status == 0);
  CHECK(again.output.find("0 failed before (retried); 0 to do") != std::string::npos);
}

TEST_CASE("ckjit ocr --shard: the shards split the pages and their union is the whole run / --merge joins them in order") {
  const Corpus& c = corpus();
  const auto& full = full_run();
  std::map<std::string, json> uni;
  std::vector<std::string> shard_files;
  size_t sum = 0;
  for (int i = 0; i < 2; ++i) {
    const fs::path out = c.out("shard" + std::to_string(i) + ".jsonl");
    shard_files.push_back(q(out));
    CliResult r = run_ckjit("ocr " + c.common + " --shard " + std::to_string(i) + "/2 -o " + q(out) + " " + q(c.docs));
    INFO(r.output);
    CHECK((r.status == 0 || r.status == 1));
    CHECK(r.output.find("shard " + std::to_string(i) + "/2: ") != std::string::npos);
    const auto part = by_page(records(out));
    CHECK(!part.empty());  // the 9 pages do not all hash to one shard
    sum += part.size();
    for (const auto& k_v_ : part) {
      const auto& k = std::get<0>(k_v_);
      const auto& v = std::get<1>(k_v_);
      CHECK_MESSAGE(uni.count(k) == 0, "page in both shards: " << k);
      uni[k] = v;
    }
  }
  CHECK(sum == kPages);
  CHECK(uni == by_page(full));  // same pages, same text

  const fs::path merged = c.out("merged.jsonl");
  CliResult m = run_ckjit("ocr --merge -o " + q(merged) + " " + shard_files[1] + " " + shard_files[0]);
  INFO(m.output);
  CHECK(m.status == 0);
  const auto mrecs = records(merged);
  REQUIRE(mrecs.size() == kPages);
  for (size_t i = 0; i < kPages; ++i) {  // the unsharded run's order, record for record
    json a = mrecs[i], b = full[i];
    a.erase("timings"), b.erase("timings");
    CHECK(a == b);
  }
}

TEST_CASE("ckjit ocr: the Slurm array script and its merge step (the local fallback of sbatch) give the unsharded result") {
  const Corpus& c = corpus();
  const auto& full = full_run();
  const fs::path outdir = c.out("slurm");
  const std::string script = std::string(CKJIT_SOURCE_DIR) + "/tools/slurm/ocr_array.sbatch";
  // What sbatch --array=0-2 sets for each task (the recipe on a real Slurm is the next test case).
  MESSAGE("local fallback, no Slurm daemon: tools/slurm/ocr_array.sbatch runs once per array index with "
          "SLURM_ARRAY_TASK_ID/SLURM_ARRAY_TASK_COUNT set as sbatch sets them, then tools/slurm/ocr_merge.sh");
  const std::string env = "CKJIT=" CKJIT_BINARY_PATH " OCR_OUT_DIR=" + q(outdir) + " SLURM_ARRAY_TASK_COUNT=3 SLURM_ARRAY_TASK_MIN=0";
  for (int i = 0; i < 3; ++i) {
    CliResult r = run_shell(env + " SLURM_ARRAY_TASK_ID=" + std::to_string(i) + " SLURM_ARRAY_JOB_ID=77 bash " + script + " " +
                            c.common + " " + q(c.docs));
    INFO(r.output);
    CHECK((r.status == 0 || r.status == 1));
    CHECK(fs::exists(outdir / ("shard-" + std::to_string(i) + "-of-3.jsonl")));
  }
  CliResult m = run_shell("CKJIT=" CKJIT_BINARY_PATH " bash " + std::string(CKJIT_SOURCE_DIR) + "/tools/slurm/ocr_merge.sh " + q(outdir) +
                          " 3 " + q(outdir / "all.jsonl"));
  INFO(m.output);
  CHECK(m.status == 0);
  CHECK(by_page(records(outdir / "all.jsonl")) == by_page(full));
  // A missing shard is named and the merge refuses.
  fs::remove(outdir / "shard-1-of-3.jsonl");
  CliResult miss = run_shell("CKJIT=" CKJIT_BINARY_PATH " bash " + std::string(CKJIT_SOURCE_DIR) + "/tools/slurm/ocr_merge.sh " +
                             q(outdir) + " 3 " + q(outdir / "all2.jsonl"));
  CHECK(miss.status != 0);
  CHECK(miss.output.find("shard-1-of-3.jsonl") != std::string::npos);
  CHECK_FALSE(fs::exists(outdir / "all2.jsonl"));
}

TEST_CASE("ckjit ocr: the Slurm recipe on a real single-node Slurm (munged + slurmctld + slurmd in a temp dir)") {
  if (::geteuid() != 0) CKJIT_SKIP("not root: the throw-away single-node Slurm runs its daemons as root");
  if (run_shell("command -v slurmctld && command -v slurmd && command -v sbatch && command -v squeue && command -v munged && "
                "command -v mungekey").status != 0)
    CKJIT_SKIP("slurm-wlm or munge is not installed (tools/setup.sh installs them); the local-fallback test covers the scripts");
  const Corpus& c = corpus();
  const auto& full = full_run();
  const std::string slurm = std::string(CKJIT_SOURCE_DIR) + "/tools/slurm/";
  const fs::path cluster = c.out("cluster"), outdir = c.out("slurm-real");
  struct Stop {  // the daemons go whatever the checks say
    std::string cmd;
    ~Stop() { run_shell(cmd); }
  } stop{"bash " + slurm + "local_cluster.sh stop " + q(cluster)};
  CliResult up = run_shell("bash " + slurm + "local_cluster.sh start " + q(cluster));
  INFO(up.output);
  REQUIRE(up.status == 0);
  const std::string env = "SLURM_CONF=" + q(cluster / "slurm.conf") + " CKJIT=" CKJIT_BINARY_PATH " SBATCH_ARGS=--cpus-per-task=1";
  CliResult sub = run_shell("cd " + q(c.dir) + " && " + env + " bash " + slurm + "submit.sh 3 " + q(outdir) + " " + c.common + " " + q(c.docs));
  INFO(sub.output);
  REQUIRE(sub.status == 0);
  MESSAGE("real Slurm: " << sub.output);
  // Until the queue is empty (the array and the merge after it), at most 120 s.
  CliResult wait = run_shell(env + " bash -c 'for i in $(seq 1 480); do [ -z \"$(squeue -h -o %i)\" ] && exit 0; sleep 0.25; done; "
                             "scancel --user=root; exit 1'");
  CHECK_MESSAGE(wait.status == 0, "the jobs did not end in 120 s; slurmctld.log: " << ocr_test::read_file(cluster / "slurmctld.log"));
  for (int i = 0; i < 3; ++i) CHECK(fs::exists(outdir / ("shard-" + std::to_string(i) + "-of-3.jsonl")));
  REQUIRE(fs::exists(outdir / "all.jsonl"));
  CHECK(by_page(records(outdir / "all.jsonl")) == by_page(full));
}

TEST_CASE("ckjit ocr: bad flags and inputs are usage errors (exit 2) with a message") {
  const Corpus& c = corpus();
  const std::string base = "ocr " + c.common + " -o " + q(c.out("bad.jsonl")) + " ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {base + "--shard 2/2 " + q(c.docs), "0-based"},
      {base + "--shard 1/0 " + q(c.docs), "at least 1"},
      {base + "--shard x " + q(c.docs), "expected i/N"},
      {base + "--dpi 0 " + q(c.docs), "--dpi"},
      {base + "-n 0 " + q(c.docs), "--n-predict"},
      {base + "--parallel 0 " + q(c.docs), "--parallel"},
      {base + "--image-min-tokens 0 " + q(c.docs), "--image-min-tokens"},
      {base + q(c.dir / "nope"), "does not exist"},
      {base + "--bogus " + q(c.docs), "bogus"},
      {base, "no INPUT"},
      {"ocr -m " + q(c.model) + " --mmproj " + q(c.mmproj) + " " + q(c.docs), "-o out.jsonl is required"},
      {"ocr -o " + q(c.out("bad.jsonl")) + " " + q(c.docs), "-m MODEL.gguf"},
      {"ocr -m " + q(c.dir / "missing.gguf") + " --mmproj " + q(c.mmproj) + " -o " + q(c.out("bad.jsonl")) + " " + q(c.docs),
       "missing.gguf"},
      {"ocr --merge -o " + q(c.out("m.jsonl")) + " " + q(c.dir / "none.jsonl"), "does not exist"},
      {base + "-j '{\"type\":\"string\",\"pattern\":\"a\"}' " + q(c.docs), "'pattern'"},
      {base + "--json-schema-file " + q(c.dir / "nope.json") + " " + q(c.docs), "--json-schema-file"},
      {base + "--max-repeats -1 " + q(c.docs), "--max-repeats"},
      {base + "--format html " + q(c.docs), "--format"},
      {base + "--max-side -5 " + q(c.docs), "--max-side"},
      {base + "--repeat-penalty 0 " + q(c.docs), "--repeat-penalty"},
  };
  for (const auto& args_want_ : cases) {
    const auto& args = std::get<0>(args_want_);
    const auto& want = std::get<1>(args_want_);
    CliResult r = run_ckjit(args);
    INFO(args);
    INFO(r.output);
    CHECK(r.status == 2);
    CHECK(r.output.find(want) != std::string::npos);
  }
  CHECK_FALSE(fs::exists(c.out("bad.jsonl")));  // nothing written on a usage error

  // A model file that is not a GGUF stops the batch (exit 1) with the loader's reason.
  ocr_test::write_file(c.dir / "junk.gguf", "not a gguf file at all");
  CliResult junk = run_ckjit("ocr -m " + q(c.dir / "junk.gguf") + " --mmproj " + q(c.mmproj) + " -o " + q(c.out("junk.jsonl")) +
                             " " + q(c.docs / "wide.png"));
  INFO(junk.output);
  CHECK(junk.status == 1);
  CHECK(junk.output.find("loading the model") != std::string::npos);
  CHECK(junk.output.find("junk.gguf") != std::string::npos);
}

}  // TEST_SUITE

TEST_SUITE("ocr") {

TEST_CASE("ckjit ocr: a 2100x2100 page reads with the default flags / a context too small for it fails before encoding and names -c") {
  const Corpus& c = corpus();
  const fs::path dir = c.dir / "big";
  fs::create_directories(dir);
  ocr_test::write_file(dir / "chart.webp", image_test::make_webp_lossy(image_test::pattern(2100, 2100, 5), 2100, 2100, 50.0f));
  // The default context holds the largest page --image-max-tokens (4096 rows) allows.
  const CliResult ok = run_ckjit("ocr " + c.common + " -o " + q(c.out("big.jsonl")) + " " + q(dir));
  INFO(ok.output);
  CHECK(ok.status == 0);
  const auto recs = records(c.out("big.jsonl"));
  REQUIRE(recs.size() == 1);
  CHECK(recs[0].contains("text"));
  CHECK(recs[0]["image_rows"] == 4096);
  // With -c 2048 the page's rows are counted from its header and refused before any encoding, in
  // the CLI's terms.
  const CliResult small = run_ckjit("ocr " + c.common + " -c 2048 -o " + q(c.out("big-small.jsonl")) + " " + q(dir));
  INFO(small.output);
  CHECK(small.status == 1);
  const auto err = records(c.out("big-small.jsonl"));
  REQUIRE(err.size() == 1);
  const std::string msg = err[0].value("error", "");
  CHECK(msg.find("the image gives 4096 rows") != std::string::npos);
  CHECK(msg.find("raise -c or lower --image-max-tokens") != std::string::npos);
  CHECK(msg.find("n_ctx") == std::string::npos);
}

}  // TEST_SUITE
