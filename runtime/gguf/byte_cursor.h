#pragma once
// Bounds-checked little-endian reading of an untrusted byte buffer. Every read checks the bytes
// that remain first; failures are ckjit::Error "<name>: at byte <offset>: <what>".
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "runtime/error.h"

namespace ckjit::gguf {

class ByteCursor {
 public:
  ByteCursor(const uint8_t* data, size_t size, const std::string& name) : data_(data), size_(size), name_(name) {}

  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }

  [[noreturn]] void fail_at(uint64_t offset, const std::string& what) const {
    throw Error(name_ + ": at byte " + std::to_string(offset) + ": " + what);
  }

  // Error unless n more bytes exist; `what` + `suffix` names the field being read (two parts so
  // that hot loops never build a message they do not need).
  void need(uint64_t n, std::string_view what, std::string_view suffix = {}) const {
    if (n > remaining()) {
      fail_at(pos_, "truncated file: " + std::string(what) + std::string(suffix) + " needs " + std::to_string(n) +
                        " bytes, only " + std::to_string(remaining()) + " remain (file size " + std::to_string(size_) + ")");
    }
  }

  template <class T> T read(std::string_view what) {
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));  // unaligned: never cast the pointer
    pos_ += sizeof(T);
    return v;
  }

  // Pointer to the next n bytes, which are skipped.
  const uint8_t* take(uint64_t n, std::string_view what) {
    need(n, what);
    const uint8_t* p = data_ + pos_;
    pos_ += n;
    return p;
  }

  // u64 length + bytes, returned as a view; the length is checked against max_len and the file.
  std::string_view read_string(std::string_view what, uint64_t max_len) {
    size_t at = pos_;
    need(8, what, " length");
    uint64_t len;
    std::memcpy(&len, data_ + pos_, 8);
    pos_ += 8;
    if (len > max_len) {
      fail_at(at, std::string(what) + " length " + std::to_string(len) + " exceeds the limit of " +
                      std::to_string(max_len) + " bytes");
    }
    if (len > remaining()) {
      fail_at(at, std::string(what) + " length " + std::to_string(len) + " exceeds the " + std::to_string(remaining()) +
                      " bytes left in the file (file size " + std::to_string(size_) + ")");
    }
    return {reinterpret_cast<const char*>(take(len, what)), static_cast<size_t>(len)};
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  const std::string& name_;
};

}  // namespace ckjit::gguf
