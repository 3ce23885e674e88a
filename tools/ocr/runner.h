#pragma once
// The batch of `ckjit ocr`: the pages of the inputs (this shard's, minus those already in the
// journal) each through libckjit's C API — a fresh prompt of the page image and the instruction in
// one chat turn — and one journal record per page. A page that fails is recorded with its error
// and the batch goes on.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "tools/ocr/inputs.h"

namespace ckjit::ocr {

struct OcrOptions {
  std::vector<std::string> inputs;
  std::string out;                 // the JSONL journal
  std::string model, mmproj;
  std::string prompt = "Transcribe all the text on this page.";
  int n_predict = 256;
  bool ignore_eos = false;         // generate n_predict tokens whatever comes (benchmarks on random weights)
  int parallel = 1;                // pages in flight: generated together (ckjit_generate_batch), the same text each
  int threads = 0;                 // 0: the machine's CPU budget
  std::string vision_precision = "f32";  // ckjit_model_params.vision_precision
  int n_ctx = 4096;
  int image_min_tokens = 8, image_max_tokens = 4096;
  float temp = 0.0f;
  uint64_t seed = 0;               // the same for every page: a page's text does not depend on its neighbours
  std::string json_schema;         // structured output: each page's text a value of this schema ("" none)
  float repeat_penalty = 1.0f;     // llama.cpp's repetition penalty (1: off)
  int max_repeats = 8;             // a page whose text ends in one unit repeated this often stops: finish_reason "repetition" (0: off)
  bool grounding = false;          // record the answer's 0-1000 boxes in page pixels ("boxes")
  double dpi = 150.0;
  int max_side = 0;                // > 0: PDF pages rendered at a lower DPI where their longest side would pass it
  Shard shard;
  std::string format = "jsonl";    // jsonl; md or txt: also each page's text in a file beside the journal (page_file_path)
  bool force_resume = false;       // resume a journal made with other settings (tools/ocr/run_settings.h)
  bool retry_errors = false;       // pages recorded as errors are done again (their error records removed)
  bool progress_tty = false;       // redraw a bar (stderr is a terminal) instead of a line per page
  std::function<bool()> stop;      // polled between pages and tokens (Ctrl-C); may be empty
};

struct OcrSummary {
  size_t pages_total = 0;   // of all inputs
  size_t pages_shard = 0;   // of this shard
  size_t skipped = 0;       // already in the journal
  size_t done = 0, failed = 0;  // this run
  size_t failed_before = 0;     // error records of this shard already in the journal (and kept)
  size_t retried = 0;           // error records of this shard removed to do their pages again
  bool interrupted = false;
};

// Runs the batch; progress and the summary lines go to log. Throws ckjit::Error for what stops the
// whole batch (the model does not load, the journal cannot be written).
// Where --format md|txt writes a page's text: beside the journal, named after the source path
// ('/' as '_') and, for a PDF or TIFF (paged), the page: out/ "docs_a.pdf-p3.md".
std::string page_file_path(const std::string& journal, const std::string& source, int page, bool paged, const std::string& ext);

OcrSummary run_ocr(const OcrOptions& options, std::FILE* log);

}  // namespace ckjit::ocr
