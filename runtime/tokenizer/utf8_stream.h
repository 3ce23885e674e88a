// Streaming detokenization: a token's bytes may end inside a UTF-8 sequence (spec/tokenizer.md §8).
// Utf8Stream holds back such an incomplete tail until the next token completes it, so a printer never
// shows half a character. Invalid bytes are passed through unchanged.
#pragma once
#include <string>
#include <string_view>

namespace ckjit::tok {

class Utf8Stream {
 public:
  // Appends bytes; returns everything up to the last complete (or invalid) sequence.
  std::string push(std::string_view bytes);
  // Returns what is still held back (an unfinished sequence at the end of generation).
  std::string flush();

 private:
  std::string pending_;
};

}  // namespace ckjit::tok
