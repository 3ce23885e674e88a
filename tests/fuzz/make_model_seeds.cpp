// Seeds for fuzz_model_load: a small valid Qwen3-VL text GGUF (tests/unit/tiny_qwen3vl.h, one
// layer, 32 tokens: ~200 KB) and a variant with a tied output, written to DIR.
#include <cstdio>
#include <string>

#include "tests/unit/tiny_qwen3vl.h"

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: make_model_seeds DIR\n"), 2;
  tinymodel::Spec s;
  s.n_layer = 1, s.n_ff = 256, s.n_head = 4, s.n_head_kv = 1, s.n_vocab = 32;
  s.tied = false;
  tinymodel::build(s).write_file(std::string(argv[1]) + "/text-untied.gguf");
  s.tied = true, s.n_deepstack = 1;
  tinymodel::build(s).write_file(std::string(argv[1]) + "/text-tied-deepstack.gguf");
  return 0;
}
