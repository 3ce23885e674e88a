// `ckjit run` with no model: the embedded default (a synthesized pair reading the sample page) runs
// end to end. The test asks for the tiny preset (CKJIT_DEFAULT_PRESET); users get the 2b one.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/unit/cli_run.h"

TEST_SUITE("decoder") {

TEST_CASE("ckjit run without -m synthesizes a pair and reads the sample page") {
  namespace fs = std::filesystem;
  fs::path cache = fs::temp_directory_path() / ("ckjit_default_model_" + std::to_string(::getpid()));
  fs::remove_all(cache);
  std::string env = "XDG_CACHE_HOME='" + cache.string() + "' CKJIT_DEFAULT_PRESET=tiny";
  auto first = run_ckjit("run -n 6", env);
  CHECK(first.status == 0);
  CHECK(first.output.find("embedded default") != std::string::npos);
  INFO(first.output);
  CHECK(first.output.find("synthesizing the default tiny pair") != std::string::npos);
  CHECK(first.output.find("timing: load") != std::string::npos);
  CHECK(first.output.find("phases: load") != std::string::npos);
  CHECK(first.output.find("image encode") != std::string::npos);
  CHECK(first.output.find("the text above is noise") != std::string::npos);
  CHECK(fs::exists(cache / "ckjit" / "default-tiny"));
  auto second = run_ckjit("run -n 3 -p 'Hello'", env);  // cached: no second synthesis
  CHECK(second.status == 0);
  CHECK(second.output.find("synthesizing") == std::string::npos);
  CHECK(second.output.find("decode") != std::string::npos);
  fs::remove_all(cache);
}

}  // TEST_SUITE
