// `ckjit run`: text generation with the Qwen3-VL decoder. Text goes to stdout as it is generated;
// the machine line, progress, the dtype report (-v) and the final timing line go to stderr.
// --force feeds given token ids instead of sampling and --dump-logits writes float32
// [steps][n_vocab] (one row per generated or forced step, the logits that chose that token), the
// same trajectory contract as the peer driver, so two runtimes can be compared step by step.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>
#include <unistd.h>

#include "pair/context.h"
#include "pair/model.h"
#include "runtime/error.h"
#include "runtime/token_ids.h"
#include "tools/command.h"
#include "tools/interrupt.h"
#include "tools/report/report_collect.h"
#include "tools/run_default.h"
#include "topology/machine.h"

namespace po = boost::program_options;

namespace {


std::string read_text_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ckjit::Error(std::string("cannot read ") + what + " '" + path + "'");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// llama.cpp's --logit-bias form: TOKEN_ID followed by +BIAS or -BIAS (e.g. 15043+1, 2-inf).
std::pair<int32_t, float> parse_logit_bias(const std::string& text) {
  const size_t sign = text.find_first_of("+-", 1);
  auto bad = [&]() { return ckjit::Error("--logit-bias '" + text + "': expected TOKEN_ID+BIAS or TOKEN_ID-BIAS (e.g. 15043+1, 2-inf)"); };
  if (sign == std::string::npos || sign == 0) throw bad();
  const std::string id = text.substr(0, sign), value = text.substr(sign);
  if (id.find_first_not_of("0123456789") != std::string::npos || id.size() > 9) throw bad();
  char* end = nullptr;
  const float bias = std::strtof(value.c_str(), &end);
  if (end == value.c_str() || *end != '\0' || std::isnan(bias)) throw bad();
  return {int32_t(std::stol(id)), bias};
}

void write_floats(std::FILE* f, const float* p, size_t n, const char* what) {
  if (std::fwrite(p, sizeof(float), n, f) != n) throw ckjit::Error(std::string("writing ") + what + " failed");
}

int run_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit run options (llama.cpp names)");
  opts.add_options()
      ("model,m", po::value<std::string>(), "text model GGUF (qwen3vl)")
      ("mmproj", po::value<std::string>(), "vision projector GGUF (clip, qwen3vl_merger)")
      ("image", po::value<std::vector<std::string>>(), "image file (PNG, JPEG, BMP, GIF, TIFF: its first page, WebP); repeat for several, placed at <__media__> markers in the prompt, else first")
      ("image-min-tokens", po::value<int>()->default_value(8), "fewest image rows per image (llama.cpp's default 8)")
      ("image-max-tokens", po::value<int>()->default_value(4096), "most image rows per image (llama.cpp's default 4096)")
      ("dump-embd", po::value<std::string>(), "write the projector rows as float32 [n_image_rows][n_embd x (1 + deepstack)]")
      ("report", po::value<std::string>()->implicit_value(""),
       "print the bridge layout; with DIR also write there machine.json, phases.json, ops.csv (one row per op call), "
       "dtypes.csv, bridge.json and report.html (adds a ~0.3 s ceiling probe after the run)")
      ("attention", po::value<std::string>(),
       "attention float order: tiled (default: f32 JIT tiles, the same bits on every CPU, faster on long prompts) | "
       "llama (llama.cpp's flash-attention rows, f16 accumulator; the default with --llama-order)")
      ("vision-precision", po::value<std::string>()->default_value("f32"),
       "how the vision tower multiplies: f32 (default; Q8_0 weights dequantized) | int8 (every matrix as Q8_0, float ones "
       "quantized at load, times Q8_0 activation rows: faster, image rows within the tolerance in perf/RESULTS.md; "
       "the same bits on every CPU) | bf16 (weights and inputs rounded to BF16, AMX-BF16 tiles where granted: fastest "
       "there, bits of this CPU only; elsewhere f32 FMA over the bf16 values)")
      ("profile", "print where the time went: per phase, each op kind (ms, %, GMAC/s, weight GB/s) and each layer")
      ("prompt,p", po::value<std::string>(), "prompt text")
      ("file,f", po::value<std::string>(), "read the prompt from a file")
      ("n-predict,n", po::value<int>()->default_value(256), "tokens to generate")
      ("threads,t", po::value<int>(), "threads (default: the usable CPU budget)")
      ("ctx-size,c", po::value<int>(), "context length (default 4096; with images, at least room for each at "
                                        "--image-max-tokens, the prompt and -n)")
      ("batch-size,b", po::value<int>()->default_value(512), "prefill chunk (rows per batch)")
      ("temp", po::value<float>()->default_value(0.0f), "temperature (0 = greedy)")
      ("seed", po::value<uint64_t>()->default_value(0), "sampling seed")
      ("top-k", po::value<int>()->default_value(40), "top-k (0 = off)")
      ("top-p", po::value<float>()->default_value(0.95f), "top-p (1 = off)")
      ("min-p", po::value<float>()->default_value(0.05f), "min-p (0 = off)")
      ("repeat-penalty", po::value<float>()->default_value(1.0f), "repetition penalty (1 = off)")
      ("repeat-last-n", po::value<int>()->default_value(64), "tokens the repetition penalty looks back")
      ("frequency-penalty", po::value<float>()->default_value(0.0f), "subtracted per occurrence in the last --repeat-last-n tokens (0 = off)")
      ("presence-penalty", po::value<float>()->default_value(0.0f), "subtracted once for a token in the last --repeat-last-n tokens (0 = off)")
      ("logit-bias,l", po::value<std::vector<std::string>>()->composing(), "TOKEN_ID+BIAS or TOKEN_ID-BIAS added to that token's logit (-inf bans it; repeatable)")
      ("json-schema,j", po::value<std::string>(), "structured output: the answer is a JSON value of this schema (JSON text; llama.cpp's flag; subset in runtime/structured/json_schema.h)")
      ("json-schema-file", po::value<std::string>(), "... the schema read from FILE")
      ("grammar", po::value<std::string>(), "structured output: the answer follows this GBNF grammar (llama.cpp's format; regular: no recursive rules)")
      ("grammar-file", po::value<std::string>(), "... the grammar read from FILE")
      ("chat", "wrap the prompt in the model's chat template (one user turn)")
      ("system", po::value<std::string>(), "system message (with --chat)")
      ("force", po::value<std::string>(), "feed these token ids instead of sampling (teacher forcing)")
      ("dump-logits", po::value<std::string>(), "write float32 [steps][n_vocab] logits")
      ("ignore-eos", "do not stop at end-of-generation tokens")
      ("no-jit", "use the scalar reference kernels for every weight")
      ("llama-order", "prefill in llama.cpp's single-token float orders too (Q6_K/Q8_0 vec_dot rows, unfused Gate-Up with llama.cpp's swiglu, Q5_K vec_dot, libm RoPE angles): a batched prompt then gives the token-by-token logits of llama.cpp's AVX-512 build bit for bit, on any CPU (ckjit runs that order everywhere; llama.cpp's own AVX2 build uses other orders, so there it is close, not equal); slower prefill")
      ("jit-decode", "decode Q6_K/Q8_0 weights with the JIT GEMV's own float order instead of llama.cpp's vec_dot order")
      ("no-memory-check", "load the weights and allocate the KV cache and activations even when they exceed the memory available")
      ("no-profile", "ignore the tuned profile (`ckjit tune`); the planner's cost model decides")
      ("verbose,v", "the kernel of every weight, plans and memory on stderr")
      ("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: ckjit run -m m.gguf [--mmproj mmproj.gguf --image page.png] -p \"text\" [-n N] [-t T] [--temp X] [--seed S] [--chat]\n"
                 "without -m: the trained tiny OCR model (assets/tiny-ocr) reads its sample page, or with CKJIT_DEFAULT_PRESET=2b\n"
                 "(also when that model is absent) a synthesized 2B-shaped random-weight pair reads assets/sample-page.png (noise)\n" << opts;
    return 0;
  }
  const bool embedded_default = !vm.count("model");
  if (embedded_default && vm.count("mmproj")) throw ckjit::Error("--mmproj needs -m (the text model it belongs to)");
  if (vm.count("prompt") && vm.count("file")) throw ckjit::Error("give the prompt with -p or -f, not both");
  const ckjit::cli::DefaultPair def = embedded_default ? ckjit::cli::default_pair() : ckjit::cli::DefaultPair{};
  const bool trained_default = embedded_default && def.preset.empty();
  // The embedded default generates a short answer unless -n says otherwise (a page of a few lines
  // for the trained model).
  const int n_predict = embedded_default && vm["n-predict"].defaulted() ? (trained_default ? 96 : 32) : vm["n-predict"].as<int>();
  // Without -c: the library's default for this many images at --image-max-tokens and -n.
  const int n_images = vm.count("image") ? int(vm["image"].as<std::vector<std::string>>().size()) : embedded_default ? 1 : 0;
  const int n_ctx = vm.count("ctx-size") ? vm["ctx-size"].as<int>()
                                         : int(ckjit::pair::default_n_ctx(n_images, vm["image-max-tokens"].as<int>(), n_predict));
  const bool verbose = vm.count("verbose") > 0;
  const std::string attention =
      vm.count("attention") ? vm["attention"].as<std::string>() : vm.count("llama-order") ? "llama" : "tiled";
  if (attention != "llama" && attention != "tiled") throw ckjit::Error("--attention must be llama or tiled, not '" + attention + "'");
  if (attention == "tiled" && vm.count("llama-order")) throw ckjit::Error("--attention tiled and --llama-order exclude each other");
  if (vm.count("llama-order") && vm.count("jit-decode")) throw ckjit::Error("--llama-order and --jit-decode exclude each other");
  ckjit::pair::ContextOptions copt;
  copt.n_ctx = n_ctx;
  copt.n_batch = std::min(vm["batch-size"].as<int>(), std::max(1, n_ctx));
  copt.image_min_tokens = vm["image-min-tokens"].as<int>();
  copt.image_max_tokens = vm["image-max-tokens"].as<int>();
  copt.check_memory = !vm.count("no-memory-check");
  copt.attention = attention == "tiled" ? ckjit::graph::AttentionOrder::tiled : ckjit::graph::AttentionOrder::llama;
  if (n_ctx < 1) throw ckjit::Error("--ctx-size must be at least 1");
  if (vm["batch-size"].as<int>() < 1) throw ckjit::Error("--batch-size must be at least 1");
  if (copt.image_min_tokens < 1 || copt.image_max_tokens < copt.image_min_tokens)
    throw ckjit::Error("--image-min-tokens must be at least 1 and at most --image-max-tokens");

  // A report directory that cannot be written is said up front; the run still runs (its text is
  // printed) and exits non-zero at the end.
  const std::string report_dir = vm.count("report") ? vm["report"].as<std::string>() : "";
  std::string report_problem = report_dir.empty() ? "" : ckjit::report::check_report_dir(report_dir);
  if (!report_problem.empty()) std::fprintf(stderr, "error: --report %s (the run goes on; no report)\n", report_problem.c_str());

  const ckjit::topo::Machine& machine = ckjit::topo::this_machine();
  const int want_threads = vm.count("threads") ? vm["threads"].as<int>() : std::max(1, machine.usable_cpus);
  if (want_threads < 1) throw ckjit::Error("--threads must be at least 1");
  std::fprintf(stderr, "machine: %s\n", machine.name().c_str());
  if (vm.count("no-profile")) std::fprintf(stderr, "profile: not used (--no-profile)\n");
  if (trained_default)
    std::fprintf(stderr, "run: no -m given: using the embedded default, the tiny OCR model trained by tools/train_tiny_ocr "
                         "(assets/tiny-ocr), reading its sample page %s\n", def.page.c_str());
  else if (embedded_default)
    std::fprintf(stderr, "run: no -m given: using the embedded default, a synthesized random-weight Qwen3-VL pair "
                         "(real tokenizer) reading the sample page; the weights are random, so the text is noise\n");

  // ---- load ----
  std::vector<std::string> image_paths;
  if (vm.count("image")) image_paths = vm["image"].as<std::vector<std::string>>();
  else if (embedded_default) image_paths = {def.page};
  ckjit::pair::LoadOptions lo;
  lo.model_path = embedded_default ? def.model : vm["model"].as<std::string>();
  lo.mmproj_path = embedded_default ? def.mmproj : vm.count("mmproj") ? vm["mmproj"].as<std::string>() : "";
  if (!lo.mmproj_path.empty() && image_paths.empty()) {
    std::fprintf(stderr, "run: --mmproj given without --image: text only\n");
    lo.mmproj_path.clear();
  }
  lo.want_vision = !image_paths.empty();
  if (lo.want_vision) lo.wanted_by = image_paths.front();
  lo.use_profile = !vm.count("no-profile");
  lo.check_memory = copt.check_memory;
  lo.plan_rows = copt.n_batch;
  // This run's context and its largest image, counted before the weights load.
  lo.planned_sessions = {1, copt.n_ctx, copt.n_batch, lo.want_vision ? int64_t(copt.image_max_tokens) : 0};
  lo.allow_jit = !vm.count("no-jit");
  lo.llama_decode_order = !vm.count("jit-decode");
  lo.llama_prefill_order = vm.count("llama-order") > 0;
  lo.vision_precision = ckjit::vision::parse_precision(vm["vision-precision"].as<std::string>());
  // The pool `ckjit tune` measures with: pinned to the CPU budget, blocking waits under a quota;
  // it repacks the weights and then runs the context.
  auto pool = ckjit::Workers::for_budget(machine, want_threads);
  lo.threads = pool->size();
  lo.pool = pool.get();
  const std::shared_ptr<const ckjit::pair::Model> pm = ckjit::pair::Model::load(lo);
  const ckjit::pair::Model& pair = *pm;
  const ckjit::graph::TextModel& model = pair.text();
  const ckjit::vision::VisionModel* vision = pair.vision();
  const auto& hp = pair.hparams();
  const int threads = pair.threads();
  if (!pair.profile_note().empty()) std::fprintf(stderr, "%s\n", pair.profile_note().c_str());
  if (!pair.mmproj_note().empty()) std::fprintf(stderr, "%s\n", pair.mmproj_note().c_str());
  const double open_ms = pair.clocks().open_ms, repack_ms = pair.clocks().repack_ms;
  ckjit::pair::Context ctx(pm, copt, pool.get());
  ckjit::graph::Session& session = ctx.session();
  std::optional<ckjit::OpProfile> profile;
  if (vm.count("profile") || !report_dir.empty()) session.set_profile(&profile.emplace());
  if (!report_dir.empty()) {
    // One record per op call, reserved for this run's calls: none of them allocates.
    const size_t per_chunk = size_t(hp.n_layer) * 16 + 4;
    profile->keep_calls(per_chunk * size_t(n_predict + 16 + int(image_paths.size()) * 2) +
                        (vision ? size_t(vision->hparams().n_layer) * 16 * image_paths.size() + 64 : 0));
  }
  const double load_ms = pair.clocks().total_ms();
  if (verbose) {
    std::fprintf(stderr, "model: %lld layers, E=%lld, F=%lld, heads %lld/%lld x %lld, vocab %lld, %s output\n",
                 (long long)hp.n_layer, (long long)hp.n_embd, (long long)hp.n_ff, (long long)hp.n_head,
                 (long long)hp.n_head_kv, (long long)hp.head_dim, (long long)hp.n_vocab,
                 hp.tied_output ? "tied" : "untied");
    std::fprintf(stderr, "isa: %s (CKJIT_MAX_ISA caps it)\n", pair.isa().isa.to_string().c_str());
    for (const auto& line : model.dtype_report()) std::fprintf(stderr, "dtype: %s\n", line.c_str());
    for (const auto& line : model.plan_report()) std::fprintf(stderr, "plan: %s\n", line.c_str());
    if (vision)
      for (const auto& line : vision->describe()) std::fprintf(stderr, "vision: %s\n", line.c_str());
    std::fprintf(stderr, "attention: %s\n", copt.attention == ckjit::graph::AttentionOrder::tiled ? "tiled (f32 JIT tiles over the panel KV cache)" : "llama.cpp's flash-attention rows (f16 accumulator)");
    std::fprintf(stderr, "memory: activation arena %.1f MiB, KV cache (f16) %.1f MiB, threads %d\n",
                 session.arena_bytes() / 1048576.0, session.kv_bytes() / 1048576.0, threads);
  }

  // ---- prompt: images first (each prepared and checked against the context before any is encoded), then the text ----
  ckjit::pair::Prompt prompt;
  prompt.chat = vm.count("chat") > 0 || (embedded_default && !vm.count("prompt") && !vm.count("file"));
  if (vm.count("system")) prompt.system = vm["system"].as<std::string>();
  std::vector<std::shared_ptr<const ckjit::vision::ImageEmbedding>> embeddings;
  if (vision) {
    std::vector<ckjit::vision::PreparedImage> prepared = ctx.prepare_images(image_paths);
    if (verbose || vm.count("report"))
      for (const auto& im : prepared)
        std::fprintf(stderr, "image: %s %d x %d -> %d x %d canvas (content %d x %d at %d,%d), %lld rows\n", im.name.c_str(),
                     im.src_width, im.src_height, im.pixels.width, im.pixels.height, im.pixels.plan.content_w,
                     im.pixels.plan.content_h, im.pixels.plan.x0, im.pixels.plan.y0, (long long)im.n_rows);
    for (auto& im : prepared) {
      embeddings.push_back(ctx.encode(im, profile ? &*profile : nullptr));
      prompt.add_image(embeddings.back());
    }
    if (vm.count("dump-embd")) {
      const std::string path = vm["dump-embd"].as<std::string>();
      std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "wb"), &std::fclose);
      if (!f) throw ckjit::Error("cannot write --dump-embd file '" + path + "'");
      for (const auto& e : embeddings) write_floats(f.get(), e->rows.data(), e->rows.size(), "--dump-embd");
    }
  } else if (vm.count("dump-embd")) {
    throw ckjit::Error("--dump-embd needs --mmproj and --image");
  }
  const double encode_ms = ctx.encode_ms();
  prompt.add_text(vm.count("prompt") ? vm["prompt"].as<std::string>()
                  : vm.count("file")  ? read_text_file(vm["file"].as<std::string>(), "prompt file")
                  : embedded_default  ? std::string("Read the text on this page.")
                                      : std::string());
  auto join_ids = [](const std::vector<int32_t>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
    return s;
  };
  const ckjit::pair::RenderedPrompt rendered = ctx.render(prompt);
  const std::vector<int32_t>& ids = rendered.token_ids();
  if (rendered.bridge && (verbose || vm.count("report")))
    for (const auto& line : ckjit::graph::describe_bridge(*rendered.bridge, hp.n_deepstack)) std::fprintf(stderr, "bridge: %s\n", line.c_str());
  if (verbose) std::fprintf(stderr, "prompt: %zu rows\nprompt ids: %s\n", ids.size(), join_ids(ids).c_str());

  ckjit::graph::GenerateOptions gopt;
  gopt.n_predict = n_predict;
  gopt.ignore_eos = vm.count("ignore-eos") > 0;
  if (vm.count("force")) {
    const std::string path = vm["force"].as<std::string>();
    gopt.forced = ckjit::parse_token_ids(read_text_file(path, "--force file"), "--force " + path);
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> dump(nullptr, &std::fclose);
  if (vm.count("dump-logits")) {
    dump.reset(std::fopen(vm["dump-logits"].as<std::string>().c_str(), "wb"));
    if (!dump) throw ckjit::Error("cannot write --dump-logits file '" + vm["dump-logits"].as<std::string>() + "'");
  }
  ckjit::SamplerParams& sp = gopt.sampler;
  sp.temp = vm["temp"].as<float>();
  sp.seed = vm["seed"].as<uint64_t>();
  sp.top_k = vm["top-k"].as<int>();
  sp.top_p = vm["top-p"].as<float>();
  sp.min_p = vm["min-p"].as<float>();
  sp.repeat_penalty = vm["repeat-penalty"].as<float>();
  sp.repeat_last_n = vm["repeat-last-n"].as<int>();
  sp.frequency_penalty = vm["frequency-penalty"].as<float>();
  sp.presence_penalty = vm["presence-penalty"].as<float>();
  if (vm.count("logit-bias"))
    for (const std::string& b : vm["logit-bias"].as<std::vector<std::string>>()) sp.logit_bias.push_back(parse_logit_bias(b));
  if (vm.count("json-schema") + vm.count("json-schema-file") + vm.count("grammar") + vm.count("grammar-file") > 1)
    throw ckjit::Error("give one of --json-schema, --json-schema-file, --grammar, --grammar-file");
  if (vm.count("grammar")) gopt.grammar = pair.gbnf_grammar(vm["grammar"].as<std::string>(), "--grammar");
  if (vm.count("grammar-file")) {
    const std::string path = vm["grammar-file"].as<std::string>();
    gopt.grammar = pair.gbnf_grammar(read_text_file(path, "--grammar-file"), path);
  }
  if (vm.count("json-schema")) gopt.grammar = pair.json_grammar(vm["json-schema"].as<std::string>(), "--json-schema");
  if (vm.count("json-schema-file")) {
    const std::string path = vm["json-schema-file"].as<std::string>();
    gopt.grammar = pair.json_grammar(read_text_file(path, "--json-schema-file"), path);
  }

  ckjit::graph::GenerateCallbacks cb;
  std::string answer;  // kept for the trained default's error rate
  cb.on_text = [&](const std::string& text) {
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (trained_default) answer += text;
  };
  if (dump)
    cb.on_logits = [&](const float* logits, int64_t n) {
      if (std::fwrite(logits, sizeof(float), size_t(n), dump.get()) != size_t(n)) throw ckjit::Error("writing --dump-logits failed");
    };
  ckjit::cli::catch_interrupt();
  cb.on_token = [](int32_t, const std::string&) { return !ckjit::cli::interrupted(); };
  const ckjit::graph::GenerateResult res = ctx.generate(rendered, gopt, cb);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  if (verbose) std::fprintf(stderr, "generated ids: %s\n", join_ids(res.generated).c_str());
  if (res.stop == ckjit::graph::StopReason::context_full) std::fprintf(stderr, "stopped: context full (%d tokens)\n", n_ctx);
  if (gopt.grammar && res.stop != ckjit::graph::StopReason::end_of_generation)
    std::fprintf(stderr, "warning: the structured answer is incomplete (generation stopped before it ended; raise -n or -c)\n");
  if (ckjit::cli::interrupted()) std::fprintf(stderr, "stopped: interrupted (Ctrl-C) after %zu tokens\n", res.generated.size());
  std::fprintf(stderr, "%s\n", ckjit::graph::timing_line(res, load_ms, threads).c_str());
  if (vision) {
    int64_t img_rows = 0;
    for (const auto& e : embeddings) img_rows += e->n_rows();
    std::fprintf(stderr,
                 "phases: load %.0f ms | repack + JIT %.0f ms | image encode %.1f ms (%zu image%s, %lld rows) | prefill %.1f ms "
                 "(image rows %.1f ms, text rows %.1f ms) | decode %.1f ms\n",
                 open_ms, repack_ms, encode_ms, embeddings.size(), embeddings.size() == 1 ? "" : "s", (long long)img_rows,
                 res.prefill_ms, res.image_prefill_ms, res.prefill_ms - res.image_prefill_ms, res.decode_ms);
  }
  if (vm.count("profile"))
    for (const auto& line : profile->report()) std::fprintf(stderr, "%s\n", line.c_str());
  if (!report_dir.empty() && report_problem.empty()) {
    namespace rep = ckjit::report;
    rep::RunReport rr;
    rr.machine_name = machine.name(), rr.machine_json = machine.to_json(), rr.threads = threads;
    rr.model_path = pair.model_path(), rr.mmproj_path = pair.mmproj_path();
    rep::RunClocks c;
    c.open_ms = open_ms, c.load_wall_ms = repack_ms;
    const auto& clk = pair.clocks();
    c.jit_ms = clk.jit_after.ms - clk.jit_before.ms, c.jit_kernels = clk.jit_after.kernels - clk.jit_before.kernels;
    c.vision = vision != nullptr, c.encode_ms = encode_ms, c.images = int64_t(embeddings.size());
    for (const auto& e : embeddings) c.image_rows += e->n_rows();
    c.image_prefill_ms = res.image_prefill_ms, c.prefill_ms = res.prefill_ms, c.decode_ms = res.decode_ms;
    c.prompt_rows = res.n_prompt, c.decoded = res.n_decoded;
    rr.phases = rep::run_phases(c);
    rr.profile = &*profile;
    rr.tensors = rep::text_tensor_rows(pair.text_file(), model);
    if (vision) {
      const auto vrows = rep::vision_tensor_rows(*pair.mmproj_file(), *vision);
      rr.tensors.insert(rr.tensors.end(), vrows.begin(), vrows.end());
    }
    rr.bridge = rendered.bridge ? rep::bridge_layout(*rendered.bridge, hp.n_deepstack) : rep::text_layout(int64_t(ids.size()));
    std::fprintf(stderr, "report: measuring the ceilings (int8 dot, f32 FMA, DRAM read) for ops.csv\n");
    rr.peaks = rep::measure_peaks_quick(machine, threads);
    try {
      rep::write_run_report(report_dir, rr);
      std::fprintf(stderr, "report: wrote %s/report.html (and machine.json, phases.json, ops.csv with %zu op calls, dtypes.csv, bridge.json)\n",
                   report_dir.c_str(), profile->calls().size());
    } catch (const ckjit::Error& e) {
      report_problem = e.what();
    }
  }
  if (trained_default && !vm.count("image") && !vm.count("prompt") && !vm.count("file"))
    std::fprintf(stderr, "page text:  %s\ncharacter error rate: %.1f %% (the model's reading above against the text the page was "
                         "rendered from)\n", def.page_text.c_str(), 100.0 * ckjit::cli::char_error_rate(answer, def.page_text));
  else if (embedded_default && !trained_default)
    std::fprintf(stderr, "note: the default pair has random weights (%s preset): the text above is noise; "
                         "run with -m/--mmproj/--image for real files\n", def.preset.c_str());
  if (!report_problem.empty()) {
    std::fprintf(stderr, "error: --report %s: no report written\n", report_problem.c_str());
    return 1;
  }
  return ckjit::cli::interrupted() ? 130 : 0;  // the shell's status for a SIGINT
}

}  // namespace

static ckjit::cli::Register reg("run", "run a Qwen3-VL text model on a prompt", run_main);
