#pragma once
// Subcommand registry: each tools/cmd_*.cpp registers one `ckjit <name>` handler at static init.
#include <functional>
#include <string>
#include <vector>

namespace ckjit::cli {

using Handler = std::function<int(const std::vector<std::string>& args)>;

struct Command {
  std::string name;
  std::string summary;
  Handler run;
};

std::vector<Command>& registry();

struct Register {
  Register(std::string name, std::string summary, Handler run) {
    registry().push_back({std::move(name), std::move(summary), std::move(run)});
  }
};

}  // namespace ckjit::cli
