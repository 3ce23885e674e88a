#pragma once
// A directory for one test process's fixtures under the system temp dir (prefix + pid), removed
// when the process ends. CTest runs every test case in its own process, each synthesizing its
// fixtures again: without the removal every run left them behind (tens of GB after a few runs).
#include <unistd.h>

#include <filesystem>
#include <algorithm>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace ckjit::test {

inline std::filesystem::path process_temp_dir(const std::string& prefix) {
  struct Registry {
    std::mutex mu;
    std::vector<std::filesystem::path> dirs;
    ~Registry() {
      for (const auto& p : dirs) {
        std::error_code ec;
        std::filesystem::remove_all(p, ec);
      }
    }
  };
  static Registry registry;
  const std::filesystem::path p = std::filesystem::temp_directory_path() / (prefix + std::to_string(::getpid()));
  std::lock_guard<std::mutex> l(registry.mu);
  if (std::find(registry.dirs.begin(), registry.dirs.end(), p) == registry.dirs.end()) registry.dirs.push_back(p);
  return p;
}

}  // namespace ckjit::test
