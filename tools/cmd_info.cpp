// `ckjit info [--json]`: the machine as ckjit sees it.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "tools/command.h"
#include "topology/machine.h"

namespace po = boost::program_options;

static int info_main(const std::vector<std::string>& args) {
  po::options_description opts("ckjit info options");
  opts.add_options()("json", "print the whole machine description as JSON")("help,h", "show this help");
  po::variables_map vm;
  po::store(po::command_line_parser(args).options(opts).run(), vm);
  if (vm.count("help")) {
    std::cout << "usage: ckjit info [--json]\n" << opts;
    return 0;
  }
  auto m = ckjit::topo::detect_machine();
  if (vm.count("json")) {
    std::printf("%s\n", m.to_json().c_str());
  } else {
    std::printf("%s\n", m.name().c_str());
    for (const auto& n : m.cgroup.notes) std::printf("note: %s\n", n.c_str());
  }
  return 0;
}

static ckjit::cli::Register reg("info", "describe this machine (cores, caches, ISA, AMX, CPU quota)", info_main);
