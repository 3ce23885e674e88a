// `ckjit plan --op gate_up --m 1028 --n 12288 --k 4096 [--wtype q4_k] [--threads N] [--json]`:
// what the planner would choose for one op on this machine, and why, in a few lines.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "jit/planner/peak_probe.h"
#include "jit/planner/planner.h"
#include "runtime/error.h"
#include "jit/planner/profile.h"
#include "tools/command.h"
#include "topology/machine.h"

namespace po = boost::program_options;

static int plan_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit plan options");
  opts.add_options()
      ("op", po::value<std::string>()->default_value("gemm"), "gemm | gemv | gate_up")
      ("m", po::value<int64_t>()->required(), "rows of activations (tokens)")
      ("n", po::value<int64_t>()->required(), "output columns (per weight matrix)")
      ("k", po::value<int64_t>()->required(), "inner dimension")
      ("wtype", po::value<std::string>()->default_value("q4_k"), "weight type (q4_k, q6_k, q8_0, f16, bf16, f32, ...)")
      ("threads,t", po::value<int>(), "exactly this many threads (capped by the CPU budget)")
      ("smt", "allow workers on SMT siblings")
      ("no-profile", "ignore the tuned profile; use the cost model only")
      ("json", "print the plan as JSON")
      ("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: ckjit plan --op gate_up --m 1028 --n 12288 --k 4096 [--wtype q4_k] [--threads N] [--json]\n"
              << opts;
    return 0;
  }
  po::notify(vm);
  ckjit::OpShape shape;
  shape.kind = ckjit::parse_op_kind(vm["op"].as<std::string>());
  shape.wtype = ckjit::parse_tensor_type(vm["wtype"].as<std::string>());
  shape.m = vm["m"].as<int64_t>(), shape.n = vm["n"].as<int64_t>(), shape.k = vm["k"].as<int64_t>();
  ckjit::validate(shape);

  const auto& machine = ckjit::topo::this_machine();
  ckjit::planner::PlannerOptions po_;
  po_.allow_smt = vm.count("smt") > 0;
  if (vm.count("threads")) {
    po_.exact_threads = vm["threads"].as<int>();
    if (po_.exact_threads < 1) throw ckjit::Error("--threads must be at least 1");
  }
  ckjit::planner::Plan plan;
  std::string profile_line = "profile: not used (--no-profile)";
  if (!vm.count("no-profile")) {
    auto load = ckjit::load_profile_for(machine);
    profile_line = ckjit::describe_profile_load(load);
    if (load.profile && load.profile->peaks)
      po_.peaks = ckjit::planner::apply_measured(ckjit::planner::default_peak_rates(machine), *load.profile->peaks);
    // An explicit --threads asks for the model's plan at that count, not the tuned one.
    const ckjit::ProfileEntry* entry =
        load.profile && !vm.count("threads") ? load.profile->find(shape) : nullptr;
    plan = ckjit::planner::plan_with_profile(shape, machine, entry, load.path, po_);
  } else {
    plan = ckjit::planner::plan_op(shape, machine, po_);
  }
  if (vm.count("json")) {
    std::printf("%s\n", plan.to_json().c_str());
    return 0;
  }
  std::printf("machine: %s\n%s\n", machine.name().c_str(), profile_line.c_str());
  std::string cpus;
  for (int c : plan.cpus) cpus += (cpus.empty() ? "" : ",") + std::to_string(c);
  std::printf("plan %s (%s): %s, cpus %s\n", shape.key().c_str(), plan.source.c_str(), plan.tiling.describe().c_str(),
              cpus.c_str());
  for (const auto& r : plan.reasons) std::printf("  %s\n", r.c_str());
  return 0;
}

static ckjit::cli::Register reg("plan", "show the planner's choice (blocks, threads) for one op, with reasons", plan_main);
