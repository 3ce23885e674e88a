// `ckjit tune --shape gate_up:64x256x512:q4_k ...` or `ckjit tune --model m.gguf`: measure the
// planner's candidate tilings for each shape (thread counts, register and cache blocks) with the
// JIT kernels (or the plain C++ reference runner), keep the fastest, and store a profile for this
// machine that `ckjit plan` / `ckjit run` then use instead of the cost model.
#include <boost/program_options.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>

#include "jit/planner/jit_runner.h"
#include "jit/planner/model_shapes.h"
#include "jit/planner/peak_probe.h"
#include "jit/planner/reference_runner.h"
#include "runtime/gguf/gguf_reader.h"
#include "jit/planner/tuner.h"
#include "runtime/error.h"
#include "jit/planner/profile.h"
#include "tools/command.h"
#include "topology/machine.h"

namespace po = boost::program_options;
using namespace ckjit;

static std::string us(double v) {
  char b[32];
  if (v >= 1e3) std::snprintf(b, sizeof b, "%.2f ms", v / 1e3);
  else std::snprintf(b, sizeof b, "%.1f us", v);
  return b;
}

static int tune_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit tune options");
  opts.add_options()
      ("shape,s", po::value<std::vector<std::string>>(), "op:MxNxK[:wtype], repeatable (e.g. gate_up:64x256x512:q4_k)")
      ("model,m", po::value<std::string>(), "GGUF model: tune the shapes of its blk.0 weights (prefill and decode)")
      ("prefill-rows", po::value<long long>()->default_value(512), "M of the prefill shapes --model derives")
      ("runner", po::value<std::string>()->default_value("jit"), "what executes the candidates: jit | reference")
      ("wtype", po::value<std::string>()->default_value("q4_k"), "weight type for shapes that name none")
      ("repeats,r", po::value<int>()->default_value(5), "timed runs per candidate (median kept)")
      ("candidates", po::value<int>()->default_value(6), "candidate tilings per shape")
      ("smt", "also try workers on SMT siblings")
      ("peaks", "measure the machine's peak rates (also without --shape)")
      ("no-peaks", "do not measure peak rates (keep those already in the profile)")
      ("peak-mib", po::value<int>()->default_value(0), "DRAM probe buffer in MiB (0: 8 x L3)")
      ("max-mmac", po::value<double>()->default_value(0),
       "largest shape (million MACs) to measure (0: the runner's default, 1e6 for jit, 200 for reference)")
      ("profile", po::value<std::string>(), "profile file (default: the machine's file in the ckjit cache directory)")
      ("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  po::notify(vm);
  if (vm.count("help")) {
    std::cout << "usage: ckjit tune (--shape op:MxNxK[:wtype] ... | --model m.gguf [--prefill-rows 512]) [--runner jit]"
                 " [--repeats 5] [--candidates 6]\n" << opts;
    return 0;
  }
  if (!vm.count("shape") && !vm.count("model") && !vm.count("peaks"))
    throw Error("give at least one --shape op:MxNxK[:wtype] (e.g. gate_up:64x256x512:q4_k), --model m.gguf, or --peaks");
  const std::string runner_name = vm["runner"].as<std::string>();
  if (runner_name != "jit" && runner_name != "reference")
    throw Error("--runner must be jit or reference, not '" + runner_name + "'");
  if (vm.count("peaks") && vm.count("no-peaks")) throw Error("--peaks and --no-peaks contradict each other");
  TensorType wtype = parse_tensor_type(vm["wtype"].as<std::string>());
  std::vector<OpShape> shapes;
  if (vm.count("shape"))
    for (const auto& s : vm["shape"].as<std::vector<std::string>>()) shapes.push_back(parse_op_shape(s, wtype));
  if (vm.count("model")) {
    long long rows = vm["prefill-rows"].as<long long>();
    if (rows < 1 || rows > (1 << 20)) throw Error("--prefill-rows must be in [1, 1048576]");
    const std::string model = vm["model"].as<std::string>();
    auto file = gguf::GgufFile::open(model);
    auto model_shapes = planner::model_op_shapes(file, rows);
    std::printf("model %s: %zu op shapes\n", model.c_str(), model_shapes.size());
    for (const auto& ms : model_shapes) {
      std::printf("  %s  (%s)\n", ms.shape.key().c_str(), ms.tensors.c_str());
      if (std::find(shapes.begin(), shapes.end(), ms.shape) == shapes.end()) shapes.push_back(ms.shape);
    }
  }
  int peak_mib = vm["peak-mib"].as<int>();
  if (peak_mib < 0 || peak_mib > 65536) throw Error("--peak-mib must be in [0, 65536]");
  int repeats = vm["repeats"].as<int>(), candidates = vm["candidates"].as<int>();
  if (repeats < 1 || repeats > 1000) throw Error("--repeats must be in [1, 1000]");
  if (candidates < 1 || candidates > 1000) throw Error("--candidates must be in [1, 1000]");
  double max_mmac = vm["max-mmac"].as<double>();
  if (!(max_mmac >= 0)) throw Error("--max-mmac must not be negative");

  const auto& machine = topo::this_machine();
  MachineIdentity id = MachineIdentity::of(machine);
  std::string path = vm.count("profile") ? vm["profile"].as<std::string>() : profile_path(id);
  std::fprintf(stderr, "machine: %s\n", machine.name().c_str());

  // Keep what an earlier tune measured for other shapes, unless the file is unusable.
  Profile profile;
  ProfileLoad load = load_profile(path, id);
  if (load.profile) profile = *load.profile;
  else if (!load.warning.empty()) std::fprintf(stderr, "note: starting a new profile; %s: %s\n", path.c_str(), load.warning.c_str());
  profile.machine = id;
  profile.created_utc.clear();

  if (!vm.count("no-peaks")) {
    planner::PeakProbeOptions popts;
    popts.dram_buffer_bytes = std::size_t(peak_mib) << 20;
    popts.progress = stderr;
    profile.peaks = planner::measure_peaks(machine, popts);
    const auto& p = *profile.peaks;
    std::printf("peaks: int8 %.0f, bf16 %.0f, f32 %.0f GMAC/s per core; DRAM %.1f GB/s (one core %.1f); sync %.2f us/thread\n",
                p.int8_gmacs_per_core, p.bf16_gmacs_per_core, p.f32_gmacs_per_core, p.dram_gbps, p.dram_gbps_per_core,
                p.sync_us);
  }

  std::unique_ptr<planner::OpRunner> runner;
  // Weights rotate through copies of 2 x L3 in all, so every run reads them from DRAM as a
  // forward pass does (decode GEMVs would otherwise be tuned on cache-hot weights).
  if (runner_name == "jit")
    runner = std::make_unique<planner::JitRunner>(max_mmac > 0 ? max_mmac * 1e6 : 1e12, 2 * machine.cache_bytes(3));
  else runner = std::make_unique<planner::ReferenceRunner>(max_mmac > 0 ? max_mmac * 1e6 : 2e8);
  std::printf("runner: %s\n", runner->name().c_str());
  planner::TuneOptions topts;
  topts.repeats = repeats;
  topts.max_candidates = std::size_t(candidates);
  topts.allow_smt = vm.count("smt") > 0;
  topts.progress = stderr;
  if (profile.peaks) topts.peaks = planner::apply_measured(planner::default_peak_rates(machine), *profile.peaks);
  auto results = planner::tune(shapes, machine, *runner, topts, profile);

  int measured = 0;
  for (const auto& r : results) {
    if (!r.measured) {
      std::printf("%s: skipped: %s\n", r.shape.key().c_str(), r.skipped_because.c_str());
      continue;
    }
    ++measured;
    const auto& e = r.entry;
    std::printf("%s: best %s: %s median (model expected %s)\n", r.shape.key().c_str(), e.best.tiling.describe().c_str(),
                us(e.best.median_us).c_str(), us(e.best.model_us).c_str());
    for (const auto& rej : e.rejected)
      std::printf("  rejected %s: %s (%.2fx)\n", rej.measured.tiling.describe().c_str(), us(rej.measured.median_us).c_str(),
                  rej.ratio);
  }
  if (measured == 0 && !shapes.empty() && !vm.count("peaks"))
    throw Error("nothing measured: every shape was skipped; no profile written");
  save_profile(profile, path);
  std::printf("profile written: %s (%zu shapes)\n", path.c_str(), profile.entries.size());
  return 0;
}

static ckjit::cli::Register reg("tune", "measure tilings and thread counts for op shapes; store a profile", tune_main);
