#pragma once
// One exception type for every user-facing failure (bad file, bad input, missing ISA).
// The CLI catches it at the top, prints the message and exits non-zero; nothing below
// main ever prints an error and keeps going.
#include <stdexcept>
#include <string>

namespace ckjit {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

// Text taken from an untrusted file (a chunk type, a decoder's reason quoting the file's bytes) as
// it may appear in a message: bytes outside printable ASCII become '?'.
inline std::string printable_ascii(std::string s) {
  for (char& c : s)
    if (c < 0x20 || c > 0x7e) c = '?';
  return s;
}

}  // namespace ckjit
