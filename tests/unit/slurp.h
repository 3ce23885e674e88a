#pragma once
// A whole file's bytes in one read ("" when it cannot be opened). Byte iterators over a stream
// (istreambuf_iterator) cost seconds per megabyte in the -O0 test code under ASan.
#include <filesystem>
#include <fstream>
#include <string>

namespace test_io {

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary | std::ios::ate);
  if (!in) return {};
  const std::streamoff n = in.tellg();
  if (n <= 0) return {};
  std::string s(size_t(n), '\0');
  in.seekg(0);
  in.read(s.data(), std::streamsize(n));
  s.resize(size_t(in.gcount()));
  return s;
}

}  // namespace test_io
