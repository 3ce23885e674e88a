// `ckjit xray`: where a run first parts from a reference (xray/xray.h). The CLI parses flags and
// prints; the comparison lives in xray/.
#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include "runtime/error.h"
#include "tools/command.h"
#include "xray/xray.h"

namespace po = boost::program_options;

namespace {

int xray_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit xray options (llama.cpp names where they mean the same)");
  opts.add_options()
      ("model,m", po::value<std::string>(), "text model GGUF (qwen3vl)")
      ("mmproj", po::value<std::string>(), "vision projector GGUF (with --image)")
      ("image", po::value<std::string>(), "one image: its vision checkpoints are compared too")
      ("image-min-tokens", po::value<int>()->default_value(8), "fewest image rows")
      ("image-max-tokens", po::value<int>()->default_value(4096), "most image rows")
      ("prompt,p", po::value<std::string>(), "prompt text")
      ("file,f", po::value<std::string>(), "prompt file")
      ("chat", "wrap the prompt in the model's chat template (one user turn)")
      ("n-predict,n", po::value<int>()->default_value(8), "greedy steps of the trajectory")
      ("threads,t", po::value<int>()->default_value(0), "threads (0: the machine's CPU budget)")
      ("ctx-size,c", po::value<int>()->default_value(4096), "context size")
      ("batch-size,b", po::value<int>()->default_value(512), "prefill rows per chunk (ckjit n_ubatch; llama.cpp -ub)")
      ("reference", po::value<std::string>()->default_value("scalar"),
       "scalar: ckjit's scalar twins of its kernels (tolerance 0) | llama: llama.cpp's graph via peer-cli (tolerance: its own envelope)")
      ("peer", po::value<std::string>(), "peer-cli path for --reference llama (default: CKJIT_PEER_CLI)")
      ("llama-dump", po::value<std::string>(), "a peer-cli --dump-tensors DIR recorded beforehand (batched prompt)")
      ("llama-dump-serial", po::value<std::string>(), "the same with -b 1 -ub 1 (the envelope)")
      ("llama-embd", po::value<std::string>(), "peer-cli --dump-embd file of the batched run (image)")
      ("llama-embd-serial", po::value<std::string>(), "peer-cli --dump-embd file of the serial run (image)")
      ("dump-dir", po::value<std::string>(), "where peer-cli writes its dumps (kept); default: a temporary folder, removed")
      ("checkpoints", po::value<std::string>()->default_value(".*"), "regex: the checkpoints compared (e.g. 'L[0-3]\\..*|logits')")
      ("rows", po::value<std::string>(), "A:B: compare only rows A..B-1 (sequence positions; patches in the vision tower)")
      ("replay", po::value<std::string>(), "replay this checkpoint's op on the reference's inputs (default: the first failing one)")
      ("llama-order", "run ckjit with --llama-order")
      ("attention", po::value<std::string>(), "ckjit's attention order: tiled (default) | llama (the default with --llama-order)")
      ("json", "print the report as one JSON object")
      ("verbose,v", "every checkpoint's line, not only the verdict")
      ("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: ckjit xray -m m.gguf [--mmproj p.gguf --image page.png] -p \"text\" [--reference scalar|llama] [--json]\n"
              << opts;
    return 0;
  }
  if (!vm.count("model")) throw ckjit::Error("xray needs -m (the text model GGUF)");
  if (vm.count("prompt") == vm.count("file")) throw ckjit::Error("give the prompt with -p or -f (one of them)");
  ckjit::xray::XrayOptions o;
  ckjit::xray::RunnerOptions& r = o.run;
  r.model = vm["model"].as<std::string>();
  if (vm.count("mmproj")) r.mmproj = vm["mmproj"].as<std::string>();
  if (vm.count("image")) r.image = vm["image"].as<std::string>();
  r.image_min_tokens = vm["image-min-tokens"].as<int>();
  r.image_max_tokens = vm["image-max-tokens"].as<int>();
  if (r.image_min_tokens < 1 || r.image_max_tokens < r.image_min_tokens)
    throw ckjit::Error("--image-min-tokens must be at least 1 and at most --image-max-tokens");
  if (vm.count("prompt")) {
    r.prompt.text = vm["prompt"].as<std::string>();
  } else {
    std::ifstream in(vm["file"].as<std::string>(), std::ios::binary);
    if (!in) throw ckjit::Error("cannot read prompt file '" + vm["file"].as<std::string>() + "'");
    std::ostringstream ss;
    ss << in.rdbuf();
    r.prompt.text = ss.str();
  }
  r.prompt.chat = vm.count("chat") > 0;
  r.threads = vm["threads"].as<int>();
  r.n_ctx = vm["ctx-size"].as<int>();
  r.n_ubatch = vm["batch-size"].as<int>();
  if (r.threads < 0 || r.n_ctx < 1 || r.n_ubatch < 1) throw ckjit::Error("-t must be >= 0, -c and -b at least 1");
  r.llama_order = vm.count("llama-order") > 0;
  const std::string att = vm.count("attention") ? vm["attention"].as<std::string>() : r.llama_order ? "llama" : "tiled";
  if (att != "llama" && att != "tiled") throw ckjit::Error("--attention must be llama or tiled, not '" + att + "'");
  r.attention = att == "tiled" ? ckjit::graph::AttentionOrder::tiled : ckjit::graph::AttentionOrder::llama;
  o.n_predict = vm["n-predict"].as<int>();
  o.reference = vm["reference"].as<std::string>();
  o.checkpoints = vm["checkpoints"].as<std::string>();
  if (vm.count("replay")) o.replay = vm["replay"].as<std::string>();
  if (vm.count("rows")) {
    const std::string r = vm["rows"].as<std::string>();
    const size_t colon = r.find(':');
    try {
      if (colon == std::string::npos) throw std::invalid_argument("no colon");
      o.row_begin = colon == 0 ? 0 : std::stoll(r.substr(0, colon));
      if (colon + 1 < r.size()) o.row_end = std::stoll(r.substr(colon + 1));
    } catch (const std::exception&) {
      throw ckjit::Error("--rows '" + r + "': expected A:B (first row, one past the last; either may be left out)");
    }
  }
  auto opt = [&](const char* k, std::string& dst) { if (vm.count(k)) dst = vm[k].as<std::string>(); };
  opt("peer", o.peer_cli), opt("llama-dump", o.llama_dump), opt("llama-dump-serial", o.llama_dump_serial);
  opt("llama-embd", o.llama_embd), opt("llama-embd-serial", o.llama_embd_serial), opt("dump-dir", o.work_dir);
  if (!o.llama_dump.empty() && o.reference != "llama") throw ckjit::Error("--llama-dump needs --reference llama");
  if (!o.llama_dump.empty() && !r.image.empty() && o.llama_embd.empty())
    std::fprintf(stderr, "xray: no --llama-embd given: V.merger and V.deepstack* are not compared\n");

  const ckjit::xray::XrayReport rep = ckjit::xray::run_xray(o);
  if (vm.count("json")) {
    std::cout << ckjit::xray::report_json(rep) << "\n";
    return 0;
  }
  if (vm.count("verbose"))
    for (const auto& c : rep.checkpoints) {
      std::string line = c.name + "  " + ckjit::xray::verdict_name(c.verdict);
      char buf[160];
      if (c.verdict != ckjit::xray::Verdict::not_compared) {
        std::snprintf(buf, sizeof buf, "  rel %.3g  max|d| %.3g  tol %.3g%s", c.distance, c.max_abs, c.tolerance,
                      c.bit_identical ? "  bit-identical" : "");
        line += buf;
        if (c.other_distance) {
          std::snprintf(buf, sizeof buf, c.other_identical ? "  (= the one-token run)" : "  (vs the one-token run %.3g)", *c.other_distance);
          line += buf;
        }
      } else {
        line += "  (" + c.why + ")";
      }
      std::cout << line << "\n";
    }
  for (const auto& line : ckjit::xray::report_text(rep)) std::cout << line << "\n";
  return 0;
}

}  // namespace

static ckjit::cli::Register reg("xray", "where a run first parts from a reference (ckjit's scalar twins or llama.cpp)", xray_main);
