#include "tools/ocr/runner.h"

#include <chrono>
#include <cstdio>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "include/ckjit.h"
#include "runtime/error.h"
#include "tools/ocr/journal.h"
#include "tools/ocr/pdf.h"
#include "tools/ocr/progress.h"

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

// The model and its one session, loaded at the first page that needs them (a run whose pages are
// all recorded or all broken loads nothing).
class Engine {
 public:
  explicit Engine(const OcrOptions& o) : o_(o) {}

  ckjit_session* session() {
    if (session_) return session_.get();
    ckjit_model_params mp;
    ckjit_model_params_default(&mp);
    mp.n_threads = o_.threads;
    mp.vision_precision = o_.vision_precision.c_str();
    mp.n_ctx = o_.n_ctx;
    mp.use_profile = 1;
    mp.find_mmproj = CKJIT_MMPROJ_FIND;  // without --mmproj: the one beside the model
    ckjit_model* m = nullptr;
    if (ckjit_model_load(o_.model.c_str(), o_.mmproj.empty() ? nullptr : o_.mmproj.c_str(), &mp, &m) != CKJIT_OK)
      throw Error(std::string("loading the model: ") + ckjit_last_error());
    model_.reset(m);
    if (o_.mmproj.empty()) std::fprintf(stderr, "ocr: mmproj %s (found beside the model)\n", ckjit_model_mmproj_path(m));
    ckjit_session_params sp;
    ckjit_session_params_default(&sp);
    sp.n_ctx = o_.n_ctx;
    sp.image_min_tokens = o_.image_min_tokens;
    sp.image_max_tokens = o_.image_max_tokens;
    ckjit_session* s = nullptr;
    if (ckjit_session_new(model_.get(), &sp, &s) != CKJIT_OK)
      throw Error(std::string("creating the session: ") + ckjit_last_error());
    session_.reset(s);
    return s;
  }

 private:
  const OcrOptions& o_;
  std::unique_ptr<ckjit_model, ModelFree> model_;
  std::unique_ptr<ckjit_session, SessionFree> session_;
};

struct Generated {
  std::string text;
  bool stopped = false;
  const std::function<bool()>* stop = nullptr;
};

int on_token(int32_t, const char* text, void* user) {
  auto* g = static_cast<Generated*>(user);
  g->text += text;
  if (*g->stop && (*g->stop)()) g->stopped = true;
  return g->stopped ? 1 : 0;
}

// The page through the model; throws ckjit::Error with the API's message when a step fails.
// Returns false when stop() cut it short (nothing is recorded then).
bool ocr_page(Engine& engine, PdfRasterizer& pdf, const OcrOptions& o, const Page& page, Record& rec) {
  ckjit_session* s = engine.session();
  auto check = [&](ckjit_status st, const char* step) {
    if (st != CKJIT_OK) throw Error(std::string(step) + ": " + ckjit_status_name(st) + ": " + ckjit_session_last_error(s));
  };
  check(ckjit_session_reset(s), "reset");
  double render_ms = 0;
  if (page.kind == DocKind::pdf) {
    const auto t = Clock::now();
    const std::vector<uint8_t> bmp = pdf.render_bmp(page.source, page.page, o.dpi);
    render_ms = ms_since(t);
    check(ckjit_session_add_image_bytes(s, bmp.data(), bmp.size()), "image");
  } else {
    check(ckjit_session_add_image_file(s, page.source.c_str()), "image");
  }
  check(ckjit_session_add_text(s, o.prompt.c_str()), "prompt");
  Generated g;
  g.stop = &o.stop;
  ckjit_generate_params gp;
  ckjit_generate_params_default(&gp);
  gp.n_predict = o.n_predict;
  gp.chat = 1;
  gp.temp = o.temp;
  gp.seed = o.seed;
  gp.on_token = on_token;
  gp.user_data = &g;
  size_t n = 0;
  const ckjit_status st = ckjit_generate(s, &gp, nullptr, 0, &n);
  if (g.stopped) return false;
  check(st, "generate");
  ckjit_timings t{};
  check(ckjit_session_timings(s, &t), "timings");
  rec["text"] = g.text;
  rec["tokens"] = n;
  rec["timings"] = {{"render_ms", render_ms},     {"encode_ms", t.encode_ms},   {"prefill_ms", t.prefill_ms},
                    {"image_prefill_ms", t.image_prefill_ms}, {"decode_ms", t.decode_ms}, {"n_prompt", t.n_prompt},
                    {"n_image_rows", t.n_image_rows}};
  return true;
}

}  // namespace

OcrSummary run_ocr(const OcrOptions& o, std::FILE* log) {
  OcrSummary sum;
  const std::vector<Document> docs = enumerate_documents(o.inputs);
  const std::vector<Page> all = expand_pages(docs);
  sum.pages_total = all.size();
  const JournalRead journal = read_journal(o.out);
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
  std::fprintf(log, "ocr: %zu documents, %zu pages", docs.size(), sum.pages_total);
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
  for (const Page* p : todo) {
    if (o.stop && o.stop()) {
      sum.interrupted = true;
      break;
    }
    // The model loads before the first page that needs it, outside that page's time; a model that
    // does not load stops the batch here (every page would fail alike).
    if (p->error.empty()) engine.session();
    const auto t = Clock::now();
    Record rec = {{"source", p->source}, {"page", p->page}};
    std::string error = p->error;
    if (error.empty()) {
      try {
        if (!ocr_page(engine, pdf, o, *p, rec)) {
          sum.interrupted = true;
          break;
        }
      } catch (const std::exception& e) {  // ckjit::Error, and e.g. bad_alloc on a huge page: that page only
        error = e.what();
      }
    }
    if (error.empty()) rec["timings"]["page_ms"] = ms_since(t);  // the whole page: render, encode, prefill, decode
    if (!error.empty()) {
      rec = {{"source", p->source}, {"page", p->page}, {"error", error}};
      ++sum.failed;
    }
    writer.append(rec);
    ++sum.done;
    progress.page_done(p->source + (p->kind == DocKind::pdf ? " p" + std::to_string(p->page) : ""), error.empty(),
                       ms_since(t) / 1000.0);
  }
  progress.finish();
  return sum;
}

}  // namespace ckjit::ocr
