// `ckjit run`: the main job. It grows with the decoder and vision issues; today it names the
// machine, validates the given files and says exactly what this build cannot do yet.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "runtime/error.h"
#include "runtime/profile.h"
#include "tools/command.h"
#include "topology/machine.h"

namespace po = boost::program_options;

static int run_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit run options (llama.cpp names)");
  opts.add_options()
      ("model,m", po::value<std::string>(), "text model GGUF")
      ("mmproj", po::value<std::string>(), "vision projector GGUF")
      ("image", po::value<std::vector<std::string>>(), "page image (PNG/JPEG)")
      ("prompt,p", po::value<std::string>(), "prompt text")
      ("file,f", po::value<std::string>(), "read the prompt from a file")
      ("n-predict,n", po::value<int>()->default_value(256), "tokens to generate")
      ("threads,t", po::value<int>(), "threads (default: planner's choice within the CPU budget)")
      ("ctx-size,c", po::value<int>()->default_value(4096), "context length")
      ("temp", po::value<float>()->default_value(0.0f), "temperature (0 = greedy)")
      ("seed", po::value<uint64_t>()->default_value(0), "sampling seed")
      ("no-profile", "ignore the tuned profile (`ckjit tune`); the planner's cost model decides")
      ("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: ckjit run -m m.gguf [--mmproj mmproj.gguf --image page.png] [-p prompt]\n" << opts;
    return 0;
  }
  auto machine = ckjit::topo::detect_machine();
  std::fprintf(stderr, "machine: %s\n", machine.name().c_str());
  // A stale, corrupt or foreign profile is reported and ignored, never fatal.
  if (vm.count("no-profile")) std::fprintf(stderr, "profile: not used (--no-profile)\n");
  else std::fprintf(stderr, "%s\n", ckjit::describe_profile_load(ckjit::load_profile_for(machine)).c_str());
  if (vm.count("threads") && vm["threads"].as<int>() < 1) throw ckjit::Error("--threads must be at least 1");
  // Until the Qwen3-VL decoder lands, the run stops here with an exact statement of what is missing.
  const char* missing = "this build has no Qwen3-VL decoder yet (issue 5: text decoder; the vision tower follows)";
  if (!vm.count("model")) {
    std::printf("ckjit run: no model given and no embedded default model in this build: %s\n", missing);
    return 0;
  }
  throw ckjit::Error("cannot run '" + vm["model"].as<std::string>() + "': " + missing);
}

static ckjit::cli::Register reg("run", "run a Qwen3-VL model on a prompt or page image", run_main);
