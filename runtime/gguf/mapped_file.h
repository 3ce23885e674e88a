#pragma once
// A whole file mapped read-only. Errors (missing file, directory, empty file, mmap failure) are
// ckjit::Error naming the path.
#include <cstddef>
#include <cstdint>
#include <string>

namespace ckjit {

class MappedFile {
 public:
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace ckjit
