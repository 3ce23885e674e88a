// tools/ocr's parts on their own: which files a folder gives and in what order, the shard split,
// the journal's resume (a killed run's cut last line) and merge, the progress line, PDF pages.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/skip.h"
#include "runtime/error.h"
#include "runtime/image/image.h"
#include "tests/unit/ocr_test_files.h"
#include "tools/ocr/inputs.h"
#include "tools/ocr/journal.h"
#include "tools/ocr/pdf.h"
#include "tools/ocr/progress.h"

namespace fs = std::filesystem;
using namespace ckjit::ocr;
using ocr_test::read_file;
using ocr_test::write_file;

namespace {

struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) : path(fs::temp_directory_path() / (name + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

const std::string kPng = std::string("\x89PNG\r\n\x1a\n", 8) + "rest";

std::vector<std::string> lines_of(const fs::path& p) {
  std::vector<std::string> out;
  std::string all = read_file(p), line;
  for (char c : all) {
    if (c == '\n') out.push_back(line), line.clear();
    else line += c;
  }
  if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace

TEST_SUITE("ocr") {

TEST_CASE("ocr inputs: folders recursively and sorted / images and PDFs by magic or extension / other files kept and marked") {
  TempDir t("ckjit_ocr_inputs");
  const fs::path d = t.path / "docs";
  write_file(d / "b.png", kPng);
  write_file(d / "a" / "c.jpg", "\xff\xd8\xff\xe0 jpeg");
  write_file(d / "a" / "z.bmp", "BM bitmap");
  write_file(d / "scan.dat", kPng);             // PNG by its magic, whatever the name
  write_file(d / "UPPER.PNG", "broken bytes");  // an image by its name: a broken page, not ignored
  write_file(d / "doc.pdf", "%PDF-1.4 ...");
  write_file(d / "fake.pdf", "garbage");        // a PDF by its name
  write_file(d / "notes.txt", "not a page");    // neither: kept, marked, and its record will say "text"
  write_file(d / "anim.bin", "GIF89a....");     // a GIF by its magic
  write_file(d / ".DS_Store", "junk");          // hidden: left out, counted
  write_file(d / "out.jsonl", "{}");            // an output of the run (the predicate below): left out, counted
  write_file(d / "out.jsonl.settings.json", "{}");
  write_file(d / "deep" / "er" / "p.pdf", "%PDF-1.7");
  fs::create_directory_symlink(d, d / "a" / "loop");  // a cycle: not followed
  const fs::path loose = t.path / "loose.txt";
  write_file(loose, "given by name");

  SkippedFiles skipped;
  const auto docs = enumerate_documents({d.string(), loose.string(), (d / "b.png").string()},
                                        [&](const std::string& f) { return f.rfind((d / "out.jsonl").string(), 0) == 0; }, &skipped);
  CHECK(skipped.hidden == 1);
  CHECK(skipped.outputs == 2);
  // A file that is no page gets its error from its first bytes.
  const auto pages = expand_pages({{(d / "notes.txt").string(), DocKind::image, false}});
  REQUIRE(pages.size() == 1);
  CHECK(pages[0].error.find("notes.txt: text, which ckjit ocr does not read") != std::string::npos);
  std::vector<std::string> names;
  for (const auto& doc : docs)
    names.push_back(fs::relative(doc.source, t.path).string() + (doc.kind == DocKind::pdf ? ":pdf" : ":img") + (doc.recognised ? "" : "?"));
  const std::vector<std::string> want = {"docs/UPPER.PNG:img", "docs/a/c.jpg:img", "docs/a/z.bmp:img", "docs/anim.bin:img",
                                         "docs/b.png:img", "docs/deep/er/p.pdf:pdf", "docs/doc.pdf:pdf", "docs/fake.pdf:pdf",
                                         "docs/notes.txt:img?", "docs/scan.dat:img", "loose.txt:img?"};
  CHECK(names == want);
  // Sources are the folder as given joined with the relative path (stable across machines for
  // the same command line).
  CHECK(docs[0].source == (d / "UPPER.PNG").string());
  // One spelling per file: the journal key of "./x", "x" and "a/../x" is one.
  const auto same = enumerate_documents({(d / "." / "b.png").string(), (d / "a" / ".." / "b.png").string(), (d / "b.png").string()});
  REQUIRE(same.size() == 1);
  CHECK(same[0].source == (d / "b.png").string());
  CHECK_THROWS_WITH_AS(enumerate_documents({(t.path / "missing").string()}), doctest::Contains("does not exist"), ckjit::Error);
}

TEST_CASE("ocr shards: i/N parsed and validated / every page in exactly one shard / the split is stable") {
  CHECK(parse_shard("0/1").index == 0);
  CHECK(parse_shard("3/4").index == 3);
  CHECK(parse_shard("3/4").count == 4);
  for (const char* bad : {"4/4", "1/0", "0/0", "-1/4", "a/4", "1/b", "14", "", "1/2/3", " 1/2", "1/99999999999"})
    CHECK_THROWS_AS(parse_shard(bad), ckjit::Error);
  CHECK_THROWS_WITH(parse_shard("4/4"), doctest::Contains("0-based"));

  std::vector<std::pair<std::string, int>> pages;
  for (int d = 0; d < 40; ++d)
    for (int p = 1; p <= 5; ++p) pages.push_back({"set/doc" + std::to_string(d) + ".pdf", p});
  for (uint32_t n : {1u, 2u, 3u, 7u}) {
    std::vector<int> per(n, 0);
    for (const auto& [s, p] : pages) {
      const uint32_t k = shard_of(s, p, n);
      REQUIRE(k < n);
      int hits = 0;  // exactly one shard claims it
      for (uint32_t i = 0; i < n; ++i) hits += shard_of(s, p, n) == i;
      CHECK(hits == 1);
      ++per[k];
    }
    for (uint32_t i = 0; i < n; ++i) CHECK(per[i] > int(pages.size() / n / 2));  // no shard starved
  }
  // Fixed values (FNV-1a 64 of "source\npage"): the split must not change between builds or machines.
  CHECK(shard_of("docs/a.png", 1, 1000) == 438);
  CHECK(shard_of("docs/a.png", 1, 7) == 3);
  CHECK(shard_of("scan.pdf", 12, 1000) == 589);
  CHECK(shard_of("scan.pdf", 12, 7) == 1);
  CHECK(page_key("a", 1) != page_key("a", 11));
}

TEST_CASE("ocr journal: records read back / a cut last line is removed and appends go on / a bad middle line refuses") {
  TempDir t("ckjit_ocr_journal");
  const fs::path j = t.path / "out.jsonl";
  CHECK(read_journal(j.string()).records == 0);  // missing: empty
  {
    JournalWriter w(j.string());
    w.append({{"source", "a.png"}, {"page", 1}, {"text", "x\ny \"q\""}, {"tokens", 2}});
    w.append({{"source", "b.pdf"}, {"page", 2}, {"error", "b.pdf page 2: broken"}});
  }
  const size_t good = fs::file_size(j);
  JournalRead r = read_journal(j.string());
  CHECK(r.records == 2);
  CHECK(r.done.count(page_key("a.png", 1)) == 1);
  CHECK(r.done.count(page_key("b.pdf", 2)) == 1);
  CHECK(r.failed.size() == 1);
  CHECK(r.failed.count(page_key("b.pdf", 2)) == 1);
  CHECK_FALSE(r.dropped_partial);

  // A run killed while writing its third record.
  { std::FILE* f = std::fopen(j.c_str(), "ab"); std::fputs("{\"source\":\"c.png\",\"page\":1,\"te", f); std::fclose(f); }
  r = read_journal(j.string());
  CHECK(r.records == 2);
  CHECK(r.dropped_partial);
  CHECK(r.done.count(page_key("c.png", 1)) == 0);
  CHECK(fs::file_size(j) == good);  // cut back to the last whole record
  { JournalWriter w(j.string()); w.append({{"source", "c.png"}, {"page", 1}, {"text", ""}}); }
  r = read_journal(j.string());
  CHECK(r.records == 3);
  CHECK_FALSE(r.dropped_partial);
  CHECK(lines_of(j).size() == 3);

  // A complete last line that is not a record is also a killed write (or junk): dropped.
  { std::FILE* f = std::fopen(j.c_str(), "ab"); std::fputs("[1,2]\n", f); std::fclose(f); }
  CHECK(read_journal(j.string()).dropped_partial);
  CHECK(lines_of(j).size() == 3);

  // --retry-errors: only the named pages' error records go; an ok record for a page makes it done.
  { JournalWriter w(j.string()); w.append({{"source", "a.png"}, {"page", 1}, {"error", "an older failure"}}); }
  r = read_journal(j.string());
  CHECK(r.failed.count(page_key("a.png", 1)) == 0);  // it has an ok record too
  CHECK(r.failed.count(page_key("b.pdf", 2)) == 1);
  CHECK(drop_error_records(j.string(), {}) == 0);
  CHECK(drop_error_records(j.string(), {page_key("nope.png", 1)}) == 0);
  CHECK(lines_of(j).size() == 4);
  CHECK(drop_error_records(j.string(), {page_key("b.pdf", 2), page_key("a.png", 1)}) == 2);
  r = read_journal(j.string());
  CHECK(r.records == 2);  // a.png's ok record and c.png's
  CHECK(r.failed.empty());
  CHECK(r.done.count(page_key("a.png", 1)) == 1);
  CHECK(r.done.count(page_key("b.pdf", 2)) == 0);
  CHECK_FALSE(fs::exists(j.string() + ".partial"));

  // A bad line before the end: not a journal of ours; refused, the file untouched.
  const fs::path other = t.path / "other.jsonl";
  write_file(other, "{\"source\":\"a\",\"page\":1}\nnot json\n{\"source\":\"b\",\"page\":1}\n");
  const std::string before = read_file(other);
  CHECK_THROWS_WITH_AS(read_journal(other.string()), doctest::Contains("line 2"), ckjit::Error);
  CHECK(read_file(other) == before);
  write_file(other, "{\"source\":\"a\",\"page\":4294967297}\n{\"source\":\"b\",\"page\":1}\n");  // page beyond int
  CHECK_THROWS_WITH_AS(read_journal(other.string()), doctest::Contains("line 1"), ckjit::Error);
  write_file(other, "{\"source\":\"a\",\"page\":0}\n{\"source\":\"b\",\"page\":1}\n");  // pages are 1-based
  CHECK_THROWS_WITH_AS(read_journal(other.string()), doctest::Contains("line 1"), ckjit::Error);
}

TEST_CASE("ocr journal: a full disk is an error naming ENOSPC and the file and the page and never a cut record") {
  if (!fs::exists("/dev/full")) CKJIT_SKIP("no /dev/full on this system");
  JournalWriter w("/dev/full");  // every write: ENOSPC
  Record r;
  r["source"] = "scan-7.png";
  r["page"] = 1;
  r["text"] = std::string(10000, 'x');  // more than stdio buffers, so the write itself fails too
  CHECK_THROWS_WITH_AS(w.append(r), doctest::Contains("No space left on device"), ckjit::Error);
  CHECK_THROWS_WITH_AS(w.append(r), doctest::Contains("scan-7.png"), ckjit::Error);
  CHECK_THROWS_WITH_AS(w.append(r), doctest::Contains("run the same command again"), ckjit::Error);
  // Reading it back as a journal (-o /dev/full) is refused, not read forever.
  CHECK_THROWS_WITH_AS(read_journal("/dev/full"), doctest::Contains("not a regular file"), ckjit::Error);
}

TEST_CASE("ocr merge: one record per page sorted by source then page number / ok wins over error / cut lines ignored") {
  TempDir t("ckjit_ocr_merge");
  const fs::path a = t.path / "a.jsonl", b = t.path / "b.jsonl", out = t.path / "m.jsonl";
  write_file(a, "{\"source\":\"y.pdf\",\"page\":10,\"text\":\"t10\"}\n{\"source\":\"x.png\",\"page\":1,\"error\":\"bad\"}\n");
  write_file(b, "{\"source\":\"y.pdf\",\"page\":2,\"text\":\"t2\"}\n{\"source\":\"x.png\",\"page\":1,\"text\":\"ok\"}\n"
                "{\"source\":\"y.pdf\",\"page\":2,\"text\":\"again\"}\n{\"source\":\"z\",\"pa");
  CHECK(merge_journals({a.string(), b.string()}, out.string()) == 2);
  const auto l = lines_of(out);
  REQUIRE(l.size() == 3);
  CHECK(nlohmann::json::parse(l[0]) == nlohmann::json({{"source", "x.png"}, {"page", 1}, {"text", "ok"}}));
  CHECK(nlohmann::json::parse(l[1])["text"] == "t2");  // first of the two page-2 records, page 2 before 10
  CHECK(nlohmann::json::parse(l[2])["page"] == 10);
  CHECK_THROWS_AS(merge_journals({(t.path / "none.jsonl").string()}, out.string()), ckjit::Error);
  CHECK(lines_of(out).size() == 3);  // a failed merge leaves the old output
}

TEST_CASE("ocr progress: durations / the bar with rate and ETA / one plain line per page off a terminal") {
  CHECK(format_duration(0) == "0s");
  CHECK(format_duration(44.6) == "45s");
  CHECK(format_duration(185) == "3m05s");
  CHECK(format_duration(7620) == "2h07m");
  CHECK(format_duration(-1) == "--");
  CHECK(format_duration(1.0 / 0.0) == "--");
  CHECK(format_progress(0, 4, 0, 8) == "[>       ] 0/4 pages  0.0 pages/min  ETA --");
  CHECK(format_progress(2, 4, 10, 8) == "[====>   ] 2/4 pages  12.0 pages/min  ETA 10s");
  CHECK(format_progress(4, 4, 2, 8) == "[========] 4/4 pages  120.0 pages/min  ETA 0s");
  CHECK(format_progress(0, 0, 0, 4) == "[====] 0/0 pages  0.0 pages/min  ETA --");

  std::FILE* f = std::tmpfile();
  REQUIRE(f);
  {
    Progress p(2, f, /*tty=*/false);
    p.page_done("a.png", true, 0.5);
    p.page_done("b.pdf p2", false, 0.25);
    p.finish();
  }
  std::rewind(f);
  char buf[512] = {};
  const size_t n = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  const std::string s(buf, n);
  CHECK(s.find("ocr: a.png ok in 0.50 s  [") == 0);
  CHECK(s.find("1/2 pages") != std::string::npos);
  CHECK(s.find("\nocr: b.pdf p2 FAILED in 0.25 s  [") != std::string::npos);
  CHECK(s.find("2/2 pages") != std::string::npos);
  CHECK(s.find("ETA 0s\n") != std::string::npos);
  CHECK(s.find('\r') == std::string::npos);  // no redraws in a log

  // On a terminal: one line redrawn in place, ended once.
  std::FILE* t = std::tmpfile();
  REQUIRE(t);
  {
    Progress p(2, t, /*tty=*/true);
    p.page_done("a.png", true, 0.5);
    p.page_done("b.pdf p2", false, 0.25);
    p.finish();
  }
  std::rewind(t);
  const size_t m = std::fread(buf, 1, sizeof buf - 1, t);
  std::fclose(t);
  const std::string tty(buf, m);
  CHECK(tty.rfind("\r[>", 0) == 0);
  CHECK(tty.find("\r[============>           ] 1/2 pages") != std::string::npos);
  CHECK(tty.find("b.pdf p2 FAILED\033[K") != std::string::npos);
  CHECK(tty.find('\n') == tty.size() - 1);
}

TEST_CASE("ocr pdf: pages counted and rasterized to BMP the image decoder reads / an oversized page / broken and encrypted PDFs") {
  TempDir t("ckjit_ocr_pdf");
  const fs::path ok = t.path / "ok.pdf", enc = t.path / "enc.pdf", bad = t.path / "bad.pdf";
  ocr_test::write_file(ok, ocr_test::make_pdf({{120, 90}, {100000, 100000}, {80, 60}}));
  ocr_test::write_file(enc, ocr_test::make_pdf({{120, 90}}, true));
  ocr_test::write_file(bad, ocr_test::broken_pdf());
  std::string err;
  CHECK(pdf_page_count(ok.string(), err) == 3);
  PdfRasterizer r;
  const auto bmp = r.render_bmp(ok.string(), 1, 144);
  const ckjit::image::Rgb8 img = ckjit::image::decode(bmp, "page");
  CHECK(img.width == 240);
  CHECK(img.height == 180);
  // The rectangle of page 1 (rg 0.1 0.3 0.7 at x 10..50, y 10..40 pt from the bottom) is there.
  CHECK(std::abs(int(img.at(60, 130, 2)) - 179) <= 1);
  CHECK(int(img.at(60, 130, 0)) < 40);
  CHECK(int(img.at(5, 5, 0)) == 255);  // white paper elsewhere
  CHECK_THROWS_WITH_AS(r.render_bmp(ok.string(), 2, 150), doctest::Contains("lower --dpi"), ckjit::Error);
  CHECK(ckjit::image::decode(r.render_bmp(ok.string(), 3, 72), "p3").width == 80);
  CHECK_THROWS_WITH_AS(r.render_bmp(ok.string(), 4, 72), doctest::Contains("no such page"), ckjit::Error);

  err.clear();
  CHECK(pdf_page_count(enc.string(), err) == -1);
  CHECK(err.find("encrypted") != std::string::npos);
  err.clear();
  CHECK(pdf_page_count(bad.string(), err) == -1);
  CHECK(err.find("cannot open as a PDF") != std::string::npos);
  CHECK_THROWS_AS(r.render_bmp(bad.string(), 1, 72), ckjit::Error);

  // encode_bmp alone: odd widths are padded per row and read back exactly.
  const uint8_t px[2 * 3 * 3] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18};  // 3 x 2, B G R
  const ckjit::image::Rgb8 small = ckjit::image::decode(encode_bmp(px, 3, 2, 9), "small");
  REQUIRE(small.width == 3);
  REQUIRE(small.height == 2);
  CHECK(int(small.at(0, 0, 0)) == 3);  // R of the first pixel
  CHECK(int(small.at(2, 1, 2)) == 16);  // B of the last
}

}  // TEST_SUITE
