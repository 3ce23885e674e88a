#include "runtime/tokenizer/utf8_stream.h"

namespace ckjit::tok {
namespace {

// Length a lead byte announces; 0 for a continuation byte, 1 for ASCII or a byte that cannot lead.
size_t announced_length(unsigned char b) {
  if ((b & 0xC0) == 0x80) return 0;
  if ((b & 0xE0) == 0xC0) return 2;
  if ((b & 0xF0) == 0xE0) return 3;
  if ((b & 0xF8) == 0xF0) return 4;
  return 1;
}

}  // namespace

std::string Utf8Stream::push(std::string_view bytes) {
  pending_.append(bytes);
  const size_t n = pending_.size();
  size_t cut = n;
  // Only the last 3 bytes can belong to an unfinished sequence.
  for (size_t k = 1; k <= 3 && k <= n; ++k) {
    const auto b = static_cast<unsigned char>(pending_[n - k]);
    const size_t len = announced_length(b);
    if (len == 0) continue;      // continuation: look further back for its lead byte
    if (len > k) cut = n - k;    // lead byte of a sequence still missing bytes
    break;
  }
  std::string out = pending_.substr(0, cut);
  pending_.erase(0, cut);
  return out;
}

std::string Utf8Stream::flush() {
  std::string out;
  out.swap(pending_);
  return out;
}

}  // namespace ckjit::tok
