#pragma once
// `ckjit synth -q ARGS` run once per build of ckjit and of the test binary (fixture_cache.h: ~1 s
// a pair in Release, 2.5 s under ASan, and many cases each made their own); the files are copied
// into the caller's folder, so a case may write beside them as before.
#include <filesystem>
#include <string>
#include <system_error>

#include "tests/unit/cli_run.h"
#include "tests/unit/fixture_cache.h"

// The synth run's status and output (status 0: the files are in `dir`).
inline CliResult synth_into(const std::string& args, const std::filesystem::path& dir) {
  namespace fs = std::filesystem;
  CliResult made{0, ""};
  const std::string key =
      "synth-" + fixture_cache::hex(fixture_cache::fnv1a(args)) + "-" + fixture_cache::stamp_of(CKJIT_BINARY_PATH);
  const fs::path src = fixture_cache::file(key, [&](const fs::path& out) {
    made = run_ckjit("synth -q " + args + " --out '" + out.string() + "'");
  });
  std::error_code ec;
  if (made.status != 0) {
    fs::remove_all(src, ec);  // no half-made pair for the next case
    return made;
  }
  fs::create_directories(dir, ec);
  fs::copy(src, dir, fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
  if (ec) return CliResult{1, "synth_into: copying " + src.string() + " to " + dir.string() + ": " + ec.message()};
  return made;
}
