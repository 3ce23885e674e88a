// `ckjit run` with no model: the embedded default runs end to end. Users get the trained tiny OCR
// pair of assets/tiny-ocr reading its sample page (and with CKJIT_DEFAULT_PRESET a synthesized pair:
// the test asks for the tiny preset; users of `tools/dev.sh run` see the 2b one).
#include <doctest/doctest.h>

#include <cstdlib>
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

// The number after "character error rate: " in the run's output, or -1.
static double printed_cer(const std::string& out) {
  const std::string key = "character error rate: ";
  const size_t at = out.find(key);
  return at == std::string::npos ? -1.0 : std::strtod(out.c_str() + at + key.size(), nullptr);
}

TEST_CASE("ckjit run without -m: the trained tiny OCR pair (assets/tiny-ocr) reads its sample page at CER <= 5 %") {
  namespace fs = std::filesystem;
  fs::path cache = fs::temp_directory_path() / ("ckjit_trained_default_" + std::to_string(::getpid()));
  fs::remove_all(cache);
  const std::string env = "XDG_CACHE_HOME='" + cache.string() + "'";
  auto first = run_ckjit("run", env);
  INFO(first.output);
  CHECK(first.status == 0);
  CHECK(first.output.find("the tiny OCR model trained by tools/train_tiny_ocr") != std::string::npos);
  CHECK(first.output.find("expanding the trained tiny OCR model") != std::string::npos);
  CHECK(first.output.find("page text:  author versions") != std::string::npos);  // assets/tiny-ocr/sample.txt
  const double cer = printed_cer(first.output);
  CHECK(cer >= 0.0);
  CHECK(cer <= 5.0);
  auto second = run_ckjit("run", env);  // expanded once: the second run reuses the cache
  CHECK(second.status == 0);
  CHECK(second.output.find("expanding") == std::string::npos);
  CHECK(printed_cer(second.output) == cer);
  fs::remove_all(cache);
}

}  // TEST_SUITE
