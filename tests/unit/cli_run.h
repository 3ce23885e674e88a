#pragma once
// Runs the ckjit CLI (or any shell command) from a test and captures exit status and output.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

struct CliResult {
  int status = -1;      // exit code, or -1 if the process did not exit normally (crash, signal)
  std::string output;   // stdout and stderr together
};

inline CliResult run_shell(const std::string& command) {
  CliResult r;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.output.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

// A cross build runs the binary through its emulator (cmake/portable_subset.cmake: qemu-aarch64).
#ifndef CKJIT_BINARY_LAUNCHER
#define CKJIT_BINARY_LAUNCHER ""
#endif

inline CliResult run_ckjit(const std::string& args, const std::string& env = "") {
  return run_shell(env + (env.empty() ? "" : " ") + CKJIT_BINARY_LAUNCHER "'" CKJIT_BINARY_PATH "' " + args);
}
