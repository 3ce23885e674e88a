#pragma once
// Reads a TokenizerVocab from a GGUF's tokenizer.ggml.* keys (spec/tokenizer.md).
#include "runtime/gguf/gguf_reader.h"
#include "runtime/tokenizer/tokenizer.h"

namespace ckjit::tok {

// Throws ckjit::Error when the file has no tokenizer or a key has the wrong type.
TokenizerVocab vocab_from_gguf(const gguf::GgufFile& f);

}  // namespace ckjit::tok
