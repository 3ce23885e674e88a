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

}  // namespace ckjit
