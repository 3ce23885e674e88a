#include "tools/ocr/runner.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <set>
#include <vector>

#include <nlohmann/json.hpp>

#include "include/ckjit.h"
#include "runtime/error.h"
#include "runtime/grounding.h"
#include "runtime/image/image.h"
#include "runtime/repetition_guard.h"
#include "tools/cli_terms.h"
#include "tools/ocr/journal.h"
#include "tools/ocr/pdf.h"
#include "tools/ocr/progress.h"
#include "tools/ocr/run_settings.h"

namespace ckjit::ocr {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

struct ModelFree {
  void operator()(ckjit_model* m) const { ckjit_model_free(m); }
};
struct SessionFree {
  void operator()(ckjit_session* s) const { ckjit_session_free(s); }
};

// The model and its sessions (one per page in flight), loaded at the first page that needs them
// (a run whose pages are all recorded or all broken loads nothing).
class Engine {
 public:
  explicit Engine(const OcrOptions& o) : o_(o) {}

  // The first n sessions, creating the model and the sessions not made yet.
  std::vector<ckjit_session*> sessions(size_t n) {
    if (!model_) {
      ckjit_model_params mp;
      ckjit_model_params_default(&mp);
      mp.n_threads = o_.threads;
      mp.vision_precision = o_.vision_precision.c_str();
      mp.n_ctx = o_.n_ctx;
      mp.n_sessions = std::max(1, o_.parallel);  // the pages generated together, each a session
      mp.image_max_tokens = o_.image_max_tokens;
      mp.use_profile = 1;
      mp.find_mmproj = CKJIT_MMPROJ_FIND;  // without --mmproj: the one beside the model
      ckjit_model* m = nullptr;
      if (ckjit_model_load(o_.model.c_str(), o_.mmproj.empty() ? nullptr : o_.mmproj.c_str(), &mp, &m) != CKJIT_OK)
        throw Error(std::string("loading the model: ") + ckjit_last_error());
      model_.reset(m);
      if (o_.mmproj.empty()) std::fprintf(stderr, "ocr: mmproj %s (found beside the model)\n", ckjit_model_mmproj_path(m));
    }
    while (sessions_.size() < n) {
      ckjit_session_params sp;
      ckjit_session_params_default(&sp);
      sp.n_ctx = o_.n_ctx;
      sp.image_min_tokens = o_.image_min_tokens;
      sp.image_max_tokens = o_.image_max_tokens;
      ckjit_session* s = nullptr;
      if (ckjit_session_new(model_.get(), &sp, &s) != CKJIT_OK)
        throw Error(std::string("creating a session: ") + ckjit_last_error());
      sessions_.emplace_back(s);
    }
    std::vector<ckjit_session*> out;
    for (size_t i = 0; i < n; ++i) out.push_back(sessions_[i].get());
    return out;
  }

 private:
  const OcrOptions& o_;
  std::unique_ptr<ckjit_model, ModelFree> model_;
  std::vector<std::unique_ptr<ckjit_session, SessionFree>> sessions_;
};

struct Generated {
  std::string text;
  bool stopped = false;   // interrupted (Ctrl-C)
  bool looping = false;   // the repetition guard fired
  const std::function<bool()>* stop = nullptr;
  RepetitionGuard guard;
};

int on_token(int32_t id, const char* text, void* user) {
  auto* g = static_cast<Generated*>(user);
  g->text += text;
  if (*g->stop && (*g->stop)()) g->stopped = true;
  if (g->guard.push(id)) g->looping = true;
  return g->stopped || g->looping ? 1 : 0;
}

const char* finish_reason(ckjit_stop_reason r, bool looping) {
  if (looping) return "repetition";
  switch (r) {
    case CKJIT_STOP_END_OF_GENERATION: return "stop";
    case CKJIT_STOP_LENGTH: return "length";
    case CKJIT_STOP_CONTEXT_FULL: return "context_full";
    default: return "interrupted";
  }
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("cannot read '" + path + "'");
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void check(ckjit_session* s, ckjit_status st, const char* step) {
  if (st != CKJIT_OK)
    throw Error(std::string(step) + ": " + ckjit_status_name(st) + ": " + cli::text_in_flag_terms(ckjit_session_last_error(s)));
}

// A page in flight: its session holds the page image and the instruction as the pending prompt.
struct InFlight {
  const Page* page = nullptr;
  ckjit_session* s = nullptr;
  Record rec;
  Clock::time_point start;
  double render_ms = 0;
  int width = 0, height = 0;  // the page image's pixels
  double dpi = 0;             // a PDF page's rendering DPI (--dpi, or lower for --max-side)
  std::string error;
  Generated g;
  ckjit_generate_params gp{};
};

// The page's image (a PDF page rasterized first) and the instruction into its session; throws
// ckjit::Error with the API's message when a step fails.
void prepare_page(PdfRasterizer& pdf, const OcrOptions& o, InFlight& f) {
  ckjit_session* s = f.s;
  check(s, ckjit_session_reset(s), "reset");
  std::vector<uint8_t> bytes;
  if (f.page->kind == DocKind::pdf) {
    const auto t = Clock::now();
    bytes = pdf.render_bmp(f.page->source, f.page->page, o.dpi, o.max_side, &f.dpi);
    f.render_ms = ms_since(t);
  } else if (f.page->kind == DocKind::tiff) {
    // One page of the file, passed on as a BMP (exact, as a PDF page is).
    const auto t = Clock::now();
    const image::Rgb8 px = image::decode_page(read_file(f.page->source), f.page->source, f.page->page - 1);
    std::vector<uint8_t> bgr(px.pixels.size());
    for (size_t i = 0; i < bgr.size(); i += 3) bgr[i] = px.pixels[i + 2], bgr[i + 1] = px.pixels[i + 1], bgr[i + 2] = px.pixels[i];
    bytes = encode_bmp(bgr.data(), px.width, px.height, size_t(px.width) * 3);
    f.render_ms = ms_since(t);
  } else {
    bytes = read_file(f.page->source);
  }
  // Errors name the file (the library sees only bytes).
  const std::string what = "image " + f.page->source;
  int32_t w = 0, h = 0;
  if (ckjit_image_info(bytes.data(), bytes.size(), &w, &h) != CKJIT_OK) throw Error(what + ": " + ckjit_last_error());
  f.width = w, f.height = h;
  check(s, ckjit_session_add_image_bytes(s, bytes.data(), bytes.size()), what.c_str());
  check(s, ckjit_session_add_text(s, o.prompt.c_str()), "prompt");
  f.g.stop = &o.stop;
  f.g.guard = RepetitionGuard(o.ignore_eos ? 0 : o.max_repeats);
  ckjit_generate_params_default(&f.gp);
  f.gp.n_predict = o.n_predict;
  f.gp.chat = 1;
  f.gp.ignore_eos = o.ignore_eos ? 1 : 0;
  f.gp.temp = o.temp;
  f.gp.seed = o.seed;
  f.gp.repeat_penalty = o.repeat_penalty;
  f.gp.json_schema = o.json_schema.empty() ? nullptr : o.json_schema.c_str();
  f.gp.on_token = on_token;
  f.gp.user_data = &f.g;
}

// The generated page into its record.
void finish_page(const OcrOptions& o, InFlight& f, size_t n) {
  ckjit_timings t;
  ckjit_timings_init(&t);
  check(f.s, ckjit_session_timings(f.s, &t), "timings");
  f.rec["text"] = f.g.text;
  f.rec["tokens"] = n;
  f.rec["finish_reason"] = finish_reason(ckjit_session_stop_reason(f.s), f.g.looping);
  f.rec["width"] = f.width, f.rec["height"] = f.height;
  if (f.page->kind == DocKind::pdf) f.rec["dpi"] = f.dpi;
  f.rec["image_rows"] = t.n_image_rows;
  if (o.grounding) {
    nlohmann::json boxes = nlohmann::json::array();
    for (const grounding::Box& b : grounding::find_boxes(f.g.text, f.width, f.height))
      boxes.push_back({{"label", b.label}, {"bbox_2d", b.grid}, {"bbox_px", b.px}});
    f.rec["boxes"] = boxes;
  }
  f.rec["timings"] = {{"render_ms", f.render_ms},     {"encode_ms", t.encode_ms},   {"prefill_ms", t.prefill_ms},
                      {"image_prefill_ms", t.image_prefill_ms}, {"decode_ms", t.decode_ms}, {"n_prompt", t.n_prompt},
                      {"n_image_rows", t.n_image_rows}};
}

// Through PATH.tmp and a rename: a reader never sees half a page. A failed write (a full disk)
// removes the .tmp and names the cause; the page's record is not written, so a resume redoes it.
void write_page_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const std::string body = !text.empty() && text.back() != '\n' ? text + "\n" : text;
  int err = 0;
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (!f) err = errno;
  else {
    if (std::fwrite(body.data(), 1, body.size(), f) != body.size() || std::fflush(f) != 0) err = errno;
    if (std::fclose(f) != 0 && !err) err = errno;
  }
  if (err) {
    std::remove(tmp.c_str());
    throw Error("writing the page file '" + tmp + "' failed: " + std::strerror(err) +
                (err == ENOSPC ? " (free some space, then run the same command again: it resumes)" : ""));
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace

std::string page_file_path(const std::string& journal, const std::string& source, int page, bool paged, const std::string& ext) {
  std::string name = std::filesystem::path(source).lexically_normal().relative_path().string();
  for (char& c : name)
    if (c == '/') c = '_';
  if (paged) name += "-p" + std::to_string(page);
  return (std::filesystem::path(journal).parent_path() / (name + "." + ext)).string();
}

OcrSummary run_ocr(const OcrOptions& o, std::FILE* log) {
  OcrSummary sum;
  // This run's own files in an input folder are not documents: the journal, its settings, page files.
  const std::string journal_path = std::filesystem::path(o.out).lexically_normal().string();
  const std::string out_dir = std::filesystem::path(journal_path).parent_path().string();
  auto is_output = [&](const std::string& f) {
    if (f == journal_path || f.rfind(journal_path + ".", 0) == 0) return true;  // and its settings, a rewrite in progress
    const std::filesystem::path p(f);
    return o.format != "jsonl" && p.parent_path().string() == out_dir && p.extension() == "." + o.format;
  };
  SkippedFiles skipped;
  const std::vector<Document> docs = enumerate_documents(o.inputs, is_output, &skipped);
  const std::vector<Page> all = expand_pages(docs);
  sum.pages_total = all.size();
  const JournalRead journal = read_journal(o.out);
  check_and_store_settings(o, journal.records, o.force_resume);
  if (journal.dropped_partial)
    std::fprintf(log, "ocr: %s: removed an unfinished last line (a killed run's page in progress: \"%s...\")\n",
                 o.out.c_str(), journal.dropped_text.c_str());
  std::vector<const Page*> todo;
  std::set<std::string> retry;
  for (const Page& p : all) {
    if (shard_of(p.source, p.page, o.shard.count) != o.shard.index) continue;
    ++sum.pages_shard;
    const std::string key = page_key(p.source, p.page);
    if (o.retry_errors && journal.failed.count(key)) {
      retry.insert(key);
      todo.push_back(&p);
    } else if (journal.done.count(key)) {
      ++sum.skipped;
      sum.failed_before += journal.failed.count(key);
    } else {
      todo.push_back(&p);
    }
  }
  const size_t other = size_t(std::count_if(docs.begin(), docs.end(), [](const Document& d) { return !d.recognised; }));
  std::fprintf(log, "ocr: %zu documents", docs.size());
  if (other > 0) std::fprintf(log, " (%zu not an image or PDF: an error record each)", other);
  if (skipped.hidden + skipped.outputs > 0)
    std::fprintf(log, " (left out: %zu hidden file%s, %zu of this run's own output files)", skipped.hidden, skipped.hidden == 1 ? "" : "s",
                 skipped.outputs);
  std::fprintf(log, ", %zu pages", sum.pages_total);
  if (o.shard.count > 1) std::fprintf(log, "; shard %u/%u: %zu pages", o.shard.index, o.shard.count, sum.pages_shard);
  std::fprintf(log, "; %zu already in %s (skipped)", sum.skipped, o.out.c_str());
  if (o.retry_errors) std::fprintf(log, "; %zu failed before (retried)", retry.size());
  std::fprintf(log, "; %zu to do\n", todo.size());
  // Only this shard's pages: another shard's errors in a shared journal stay as they are.
  drop_error_records(o.out, retry);
  sum.retried = retry.size();

  JournalWriter writer(o.out);
  Engine engine(o);
  PdfRasterizer pdf;
  Progress progress(todo.size(), log, o.progress_tty);
  // Pages in groups of o.parallel: each group's pages prepared in order (image encoded, prompt
  // pending), then generated together (ckjit_generate_batch: every page gets the text it would get
  // alone), then recorded in page order.
  const size_t P = size_t(std::max(1, o.parallel));
  for (size_t g0 = 0; g0 < todo.size() && !sum.interrupted; g0 += P) {
    if (o.stop && o.stop()) {
      sum.interrupted = true;
      break;
    }
    std::vector<InFlight> group;
    for (size_t i = g0; i < std::min(todo.size(), g0 + P); ++i) {
      group.emplace_back();
      group.back().page = todo[i];
    }
    // The model loads before the first page that needs it, outside that page's time; a model that
    // does not load stops the batch here (every page would fail alike).
    bool any = false;
    for (const InFlight& f : group) any = any || f.page->error.empty();
    std::vector<ckjit_session*> sessions;
    if (any) sessions = engine.sessions(group.size());
    std::vector<ckjit_session*> run;
    std::vector<const ckjit_generate_params*> params;
    std::vector<InFlight*> running;
    for (size_t i = 0; i < group.size(); ++i) {
      InFlight& f = group[i];
      f.start = Clock::now();
      f.rec = {{"source", f.page->source}, {"page", f.page->page}};
      f.error = f.page->error;
      if (!f.error.empty()) continue;
      f.s = sessions[i];
      try {
        prepare_page(pdf, o, f);  // ckjit::Error, and e.g. bad_alloc on a huge page: that page only
        run.push_back(f.s), params.push_back(&f.gp), running.push_back(&f);
      } catch (const std::exception& e) {
        f.error = e.what();
      }
    }
    std::vector<ckjit_status> st(run.size(), CKJIT_OK);
    std::vector<size_t> n(run.size(), 0);
    if (!run.empty()) ckjit_generate_batch(run.data(), params.data(), run.size(), st.data(), n.data());
    for (const InFlight* f : running)
      if (f->g.stopped) sum.interrupted = true;
    if (sum.interrupted) break;  // nothing of the cut group is recorded
    for (size_t k = 0; k < running.size(); ++k) {
      InFlight& f = *running[k];
      try {
        check(f.s, st[k], "generate");
        finish_page(o, f, n[k]);
      } catch (const std::exception& e) {
        f.error = e.what();
      }
    }
    for (InFlight& f : group) {
      if (f.error.empty()) f.rec["timings"]["page_ms"] = ms_since(f.start);  // the whole page: render, encode, prefill, decode
      if (!f.error.empty()) {
        f.rec = {{"source", f.page->source}, {"page", f.page->page}, {"error", f.error}};
        ++sum.failed;
      }
      // The page file first: a run killed between the two redoes the page on resume (the journal
      // says what is done), where the other order would leave a journaled page without its file.
      if (o.format != "jsonl" && f.error.empty())
        write_page_file(page_file_path(o.out, f.page->source, f.page->page, f.page->kind != DocKind::image, o.format), f.rec["text"].get<std::string>());
      writer.append(f.rec);
      ++sum.done;
      progress.page_done(f.page->source + (f.page->kind != DocKind::image ? " p" + std::to_string(f.page->page) : ""),
                         f.error.empty(), ms_since(f.start) / 1000.0);
    }
  }
  progress.finish();
  return sum;
}

}  // namespace ckjit::ocr
