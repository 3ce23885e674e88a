// ckjit: dispatch to the registered subcommand; every error ends here with a message and exit 1.
#include <algorithm>
#include <cstdio>
#include <exception>

#include "runtime/error.h"
#include "tools/cli_terms.h"
#include "tools/command.h"
#include "tools/interrupt.h"

namespace ckjit::cli {
std::vector<Command>& registry() {
  static std::vector<Command> commands;
  return commands;
}
}  // namespace ckjit::cli

static void usage(FILE* out) {
  std::fprintf(out, "usage: ckjit <command> [options]\n\ncommands:\n");
  auto commands = ckjit::cli::registry();
  std::sort(commands.begin(), commands.end(), [](auto& a, auto& b) { return a.name < b.name; });
  for (const auto& c : commands) std::fprintf(out, "  %-10s %s\n", c.name.c_str(), c.summary.c_str());
  std::fprintf(out, "\n'ckjit <command> --help' describes each command's options.\n");
}

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  ckjit::cli::catch_bus_errors();
  std::string name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    usage(stdout);
    return 0;
  }
  for (const auto& c : ckjit::cli::registry()) {
    if (c.name != name) continue;
    try {
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const ckjit::Error& e) {
      std::fprintf(stderr, "ckjit %s: error: %s\n", name.c_str(), ckjit::cli::in_flag_terms(e).c_str());
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ckjit %s: error: %s\n", name.c_str(), e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "ckjit: unknown command '%s'\n\n", name.c_str());
  usage(stderr);
  return 2;
}
