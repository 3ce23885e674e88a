// Builds a TokenizerVocab from Hugging Face tokenizer files the way llama.cpp's converter
// (convert_hf_to_gguf.py, get_vocab_base / _set_vocab_gpt2) fills tokenizer.ggml.*: byte-level token
// texts from tokenizer.json, added tokens typed CONTROL (HF "special" or special-looking text) or
// USER_DEFINED, ids missing from the vocab filled with "[PADi]" UNUSED up to the model's vocab_size.
// Used by tests and by whoever writes GGUFs with a real vocabulary.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "runtime/tokenizer/tokenizer.h"

namespace ckjit::tok {

struct HfTokenizerOptions {
  int32_t vocab_size = 0;      // config.json vocab_size (pads with [PADi]); 0 = just the tokenizer's ids
  int32_t fallback_bos_id = -1;  // config.json bos_token_id, used when tokenizer_config has no bos_token
  int32_t fallback_eos_id = -1;  // config.json eos_token_id, used when tokenizer_config has no eos_token
};

// tokenizer_config_json may be empty (then add_bos = false, BOS/EOS from the fallbacks).
// Throws ckjit::Error on malformed or unsupported (non-BPE, non-Qwen2 pre-tokenizer) input.
TokenizerVocab vocab_from_hf_json(std::string_view tokenizer_json, std::string_view tokenizer_config_json,
                                  const HfTokenizerOptions& options = {});

// Reads <dir>/tokenizer.json and, if present, <dir>/tokenizer_config.json.
TokenizerVocab vocab_from_hf_dir(const std::string& dir, const HfTokenizerOptions& options = {});

// llama.cpp converter's does_token_look_special: <|...|>, <｜...｜>, <pad>, <mask>, <unused...> etc.
bool hf_token_looks_special(std::string_view text);

}  // namespace ckjit::tok
