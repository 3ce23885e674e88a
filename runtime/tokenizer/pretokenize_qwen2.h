// The Qwen2 pre-tokenizer: splits code points the way llama.cpp's hand-written matcher for the regex
//   (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// does (spec/tokenizer.md §3). No normalization.
#pragma once
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace ckjit::tok {

// Appends the length (in code points) of each piece of `cps`, in order; the lengths sum to cps.size().
void split_qwen2(std::span<const uint32_t> cps, std::vector<size_t>& piece_lengths);

}  // namespace ckjit::tok
