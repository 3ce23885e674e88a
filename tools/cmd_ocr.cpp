// `ckjit ocr INPUT... -o out.jsonl`: every page of the inputs (images, folders, PDFs) through the
// vision model, one JSON line per page; resumable, shardable (--shard i/N) and `--merge` joins the
// shards' journals. Only the flags live here; the work is tools/ocr (library ckjit_ocr).
// Exit status: 0 every page ok, 1 some page failed (or the batch stopped), 2 a usage error,
// 130 interrupted (Ctrl-C; rerun to resume).
#include <boost/program_options.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>

#include "include/ckjit.h"
#include "pair/context.h"
#include "runtime/error.h"
#include "tools/command.h"
#include "tools/interrupt.h"
#include "tools/ocr/journal.h"
#include "tools/ocr/runner.h"

namespace po = boost::program_options;

namespace {

int usage_error(const std::string& msg) {
  std::fprintf(stderr, "ckjit ocr: error: %s\n(ckjit ocr --help lists the options)\n", msg.c_str());
  return 2;
}

int ocr_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit ocr options (llama.cpp names where they mean the same as in ckjit run)");
  opts.add_options()
      ("model,m", po::value<std::string>(), "text model GGUF (qwen3vl)")
      ("mmproj", po::value<std::string>(), "vision projector GGUF (default: the one mmproj*.gguf beside the model)")
      ("output,o", po::value<std::string>(), "JSONL journal: one record per page, appended; pages already there are skipped")
      ("prompt,p", po::value<std::string>(), "instruction after each page image (one chat turn)")
      ("n-predict,n", po::value<int>()->default_value(256), "most tokens per page")
      ("ignore-eos", "generate --n-predict tokens per page whatever comes (as llama.cpp's flag; benchmarks on random weights)")
      ("parallel,np", po::value<int>()->default_value(1), "pages in flight, generated together in one batch (one decode pass reads the weights for all; each page's text is the same as alone)")
      ("threads,t", po::value<int>(), "threads (default: the usable CPU budget)")
      ("vision-precision", po::value<std::string>()->default_value("f32"), "vision tower arithmetic: f32 (default) | int8 (every matrix as Q8_0: faster) | bf16 (AMX-BF16 where granted), as in ckjit run")
      ("ctx-size,c", po::value<int>(), "context length (default: room for the largest page --image-max-tokens allows, "
                                        "the prompt and -n; at least 4096)")
      ("temp", po::value<float>()->default_value(0.0f), "temperature (0 = greedy)")
      ("seed", po::value<uint64_t>()->default_value(0), "sampling seed (the same for every page)")
      ("json-schema,j", po::value<std::string>(), "structured output: each page's text is a JSON value of this schema (JSON text, as ckjit run)")
      ("json-schema-file", po::value<std::string>(), "... the schema read from FILE")
      ("repeat-penalty", po::value<float>()->default_value(1.0f), "penalize repeated tokens (llama.cpp's; 1 = off)")
      ("max-repeats", po::value<int>()->default_value(8), "stop a page whose text ends in one unit (up to 64 tokens, 32 or more in all) repeated this often: finish_reason \"repetition\" (0 = off; off with --ignore-eos)")
      ("grounding", "record the boxes of the answer (Qwen3-VL's 0-1000 grid: \"bbox_2d\" or box markers) rescaled to page pixels as \"boxes\"")
      ("image-min-tokens", po::value<int>()->default_value(8), "fewest image rows per page")
      ("image-max-tokens", po::value<int>()->default_value(4096), "most image rows per page")
      ("dpi", po::value<double>()->default_value(150.0), "resolution PDF pages are rasterized at (10..1200)")
      ("max-side", po::value<int>()->default_value(0), "render a PDF page at a lower DPI where its longest side would pass PX pixels (e.g. 1288; 0 = off); the record's dpi says which")
      ("format", po::value<std::string>()->default_value("jsonl"), "jsonl (the journal only) | md | txt: also each page's text in its own file beside the journal (docs_a.pdf-p3.md)")
      ("force-resume", "resume a journal whose pages were made with other settings (model, prompt, DPI, schema, sampling...; refused otherwise)")
      ("retry-errors", "do the pages recorded as errors again (their error records are replaced); default: skip them")
      ("shard", po::value<std::string>(), "i/N: only this 0-based shard of N (0 <= i < N); a page's shard depends on its source path and number only")
      ("merge", "join the journals given as INPUT (e.g. the shards') into -o: one record per page, sorted by source and page")
      ("help,h", "show this help");
  po::options_description hidden;
  hidden.add_options()("input", po::value<std::vector<std::string>>(), "");
  po::options_description all;
  all.add(opts).add(hidden);
  po::positional_options_description pos;
  pos.add("input", -1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return usage_error(e.what());
  }
  if (vm.count("help")) {
    std::cout << "usage: ckjit ocr -m m.gguf [--mmproj mmproj.gguf] -o out.jsonl [--shard i/N] INPUT...\n"
                 "       ckjit ocr --merge -o merged.jsonl shard-0.jsonl shard-1.jsonl ...\n"
                 "INPUT: image files (PNG, JPEG, BMP, GIF, WebP, TIFF: every page), PDFs, folders (searched recursively, sorted)\n"
                 "exit status: 0 all pages ok, 1 some page failed, 2 usage error, 130 interrupted (rerun to resume)\n"
              << opts;
    return 0;
  }
  if (!vm.count("output")) return usage_error("-o out.jsonl is required");
  if (!vm.count("input")) return usage_error(vm.count("merge") ? "--merge needs the journals to join" : "no INPUT given (image files, PDFs or folders)");
  const auto inputs = vm["input"].as<std::vector<std::string>>();
  const std::string out = vm["output"].as<std::string>();

  if (vm.count("merge")) {
    for (const char* flag : {"model", "mmproj", "shard", "prompt", "retry-errors"})
      if (vm.count(flag)) return usage_error(std::string("--merge joins journals; --") + flag + " does not apply");
    for (const auto& in : inputs)
      if (!std::filesystem::is_regular_file(in)) return usage_error("journal '" + in + "' does not exist");
    const size_t dup = ckjit::ocr::merge_journals(inputs, out);
    std::fprintf(stderr, "ocr: merged %zu journals into %s (%zu duplicate records dropped)\n", inputs.size(), out.c_str(), dup);
    return 0;
  }

  ckjit::ocr::OcrOptions o;
  o.inputs = inputs;
  o.out = out;
  if (!vm.count("model")) return usage_error("-m MODEL.gguf is required (and --mmproj MMPROJ.gguf, unless it lies beside the model)");
  o.model = vm["model"].as<std::string>();
  if (vm.count("mmproj")) o.mmproj = vm["mmproj"].as<std::string>();
  for (const std::string* f : {&o.model, &o.mmproj})
    if (!f->empty() && !std::filesystem::is_regular_file(*f)) return usage_error("'" + *f + "' does not exist");
  if (vm.count("prompt")) o.prompt = vm["prompt"].as<std::string>();
  o.n_predict = vm["n-predict"].as<int>();
  o.threads = vm.count("threads") ? vm["threads"].as<int>() : 0;
  o.vision_precision = vm["vision-precision"].as<std::string>();
  // Without -c the context holds the largest page --image-max-tokens allows (the library's default
  // for one image a page, pair/context.h): a big page never fails after encoding.
  o.n_ctx = vm.count("ctx-size") ? vm["ctx-size"].as<int>()
                                 : int(ckjit::pair::default_n_ctx(1, vm["image-max-tokens"].as<int>(), vm["n-predict"].as<int>()));
  o.temp = vm["temp"].as<float>();
  o.seed = vm["seed"].as<uint64_t>();
  o.repeat_penalty = vm["repeat-penalty"].as<float>();
  o.max_repeats = vm["max-repeats"].as<int>();
  o.grounding = vm.count("grounding") != 0;
  if (!(o.repeat_penalty > 0.0f)) return usage_error("--repeat-penalty must be positive");
  if (o.max_repeats < 0) return usage_error("--max-repeats must be 0 (off) or more");
  if (vm.count("json-schema") && vm.count("json-schema-file")) return usage_error("give --json-schema or --json-schema-file, not both");
  if (vm.count("json-schema")) o.json_schema = vm["json-schema"].as<std::string>();
  if (vm.count("json-schema-file")) {
    std::ifstream in(vm["json-schema-file"].as<std::string>(), std::ios::binary);
    if (!in) return usage_error("cannot read --json-schema-file '" + vm["json-schema-file"].as<std::string>() + "'");
    o.json_schema.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  if (!o.json_schema.empty() && ckjit_json_schema_check(o.json_schema.c_str()) != CKJIT_OK)
    return usage_error(std::string("--json-schema: ") + ckjit_last_error());
  o.image_min_tokens = vm["image-min-tokens"].as<int>();
  o.image_max_tokens = vm["image-max-tokens"].as<int>();
  o.dpi = vm["dpi"].as<double>();
  o.max_side = vm["max-side"].as<int>();
  if (o.max_side < 0 || o.max_side > 65536) return usage_error("--max-side must be between 0 (off) and 65536");
  o.retry_errors = vm.count("retry-errors") != 0;
  o.force_resume = vm.count("force-resume") != 0;
  o.format = vm["format"].as<std::string>();
  if (o.format != "jsonl" && o.format != "md" && o.format != "txt") return usage_error("--format must be jsonl, md or txt");
  o.ignore_eos = vm.count("ignore-eos") != 0;
  o.parallel = vm["parallel"].as<int>();
  if (o.parallel < 1 || o.parallel > 64) return usage_error("--parallel must be between 1 and 64");
  if (o.n_predict < 1) return usage_error("--n-predict must be at least 1");
  if (vm.count("threads") && o.threads < 1) return usage_error("--threads must be at least 1");
  if (o.n_ctx < 1) return usage_error("--ctx-size must be at least 1");
  if (!(o.temp >= 0)) return usage_error("--temp must not be negative");
  if (o.image_min_tokens < 1 || o.image_max_tokens < o.image_min_tokens)
    return usage_error("--image-min-tokens must be at least 1 and at most --image-max-tokens");
  if (!(o.dpi >= 10 && o.dpi <= 1200)) return usage_error("--dpi must be between 10 and 1200");
  try {
    if (vm.count("shard")) o.shard = ckjit::ocr::parse_shard(vm["shard"].as<std::string>());
    // The inputs are checked before anything loads: a typo is a usage error, not a failed page.
    ckjit::ocr::enumerate_documents(o.inputs);
  } catch (const ckjit::Error& e) {
    return usage_error(e.what());
  }
  o.progress_tty = ::isatty(STDERR_FILENO) != 0;
  ckjit::cli::catch_interrupt();
  o.stop = [] { return ckjit::cli::interrupted(); };

  const ckjit::ocr::OcrSummary s = ckjit::ocr::run_ocr(o, stderr);
  std::fprintf(stderr, "ocr: %zu pages done (%zu failed), %zu skipped (already in %s)", s.done, s.failed, s.skipped, out.c_str());
  if (s.failed_before) std::fprintf(stderr, ", of which %zu failed before (--retry-errors does them again)", s.failed_before);
  if (s.retried) std::fprintf(stderr, "; %zu of them were retried error pages", s.retried);
  std::fprintf(stderr, "\n");
  if (s.interrupted) {
    std::fprintf(stderr, "ocr: interrupted; rerun the same command to resume\n");
    return 130;
  }
  return s.failed || s.failed_before ? 1 : 0;
}

ckjit::cli::Register reg("ocr", "pages of images, folders and PDFs to JSONL text (resumable, --shard i/N)", ocr_main);

}  // namespace
