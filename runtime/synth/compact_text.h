#pragma once
// A compact Qwen3-VL text GGUF — what assets/ ships for a trained model: token_embd holds only the
// rows of the ids the model uses, and there is no tokenizer — expanded into the file llama.cpp and
// ckjit read: the full token_embd table and the Qwen3 tokenizer's keys. A compact file has
//   ckjit.compact.used_ids   i32[n_used]   the id of each token_embd row, ascending, < n_vocab
//   ckjit.compact.n_vocab    u32           rows of the full table
//   ckjit.compact.filler     u8[row bytes] every other row, encoded in token_embd's type (a trained
//                                          model's "never emitted" row, tools/train_tiny_ocr)
// and otherwise the keys and tensors of a qwen3vl text file (copied as they are).
#include <string>

namespace ckjit::synth {

bool is_compact_text(const std::string& path);

// Writes out_path (through a temporary file renamed into place). Throws ckjit::Error on a file that
// is not a consistent compact file, or on I/O failure.
void expand_compact_text(const std::string& compact_path, const std::string& tokenizer_dir, const std::string& out_path);

}  // namespace ckjit::synth
