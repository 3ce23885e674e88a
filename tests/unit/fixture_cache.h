#pragma once
// Files that many test processes need, made once per test binary: ctest runs each case in a process
// of its own, and a tiny model with the real 151,936-token vocabulary takes a second to build in
// Release and ~10 s under ASan (test code -O0). Kept in CKJIT_BUILD_DIR/test-fixtures/<binary>/<stamp>/<key>:
// the stamp (this binary's size and modification time) changes with every rebuild, so no test reads
// what an older builder wrote (older stamps are removed when a new one is made). A process that
// finds another making the same key waits for it (flock on key.lock) instead of making it again;
// the file itself is made under a private name and renamed into place, so none is seen half made.
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <system_error>

// Where the caches live: the build tree of the test binary. A program that includes a builder but
// never asks for a cached file (the fuzz build's seed writer) gets the temp folder instead.
#ifndef CKJIT_BUILD_DIR
#define CKJIT_BUILD_DIR ""
#endif

namespace fixture_cache {

namespace fs = std::filesystem;

inline uint64_t fnv1a(const void* data, size_t n, uint64_t h = 1469598103934665603ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
inline uint64_t fnv1a(const std::string& s, uint64_t h = 1469598103934665603ull) { return fnv1a(s.data(), s.size(), h); }

inline std::string hex(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[size_t(i)] = d[v & 15];
  return s;
}

// A file's size and modification time ("" when it cannot be read): what names a build of it.
inline std::string stamp_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(st.st_size) + "-" + std::to_string(st.st_mtim.tv_sec) + "-" + std::to_string(st.st_mtim.tv_nsec);
}

// This build's cache folder (made on first use).
inline const fs::path& dir() {
  static const fs::path d = [] {
    std::string stamp = stamp_of("/proc/self/exe");
    if (stamp.empty()) stamp = "pid" + std::to_string(::getpid());  // no /proc: a cache per process
    // One folder per test binary: each removes only its own older stamps.
    std::error_code le;
    const fs::path exe = fs::read_symlink("/proc/self/exe", le);
    const fs::path build = *CKJIT_BUILD_DIR ? fs::path(CKJIT_BUILD_DIR) : fs::temp_directory_path();
    const fs::path root = build / "test-fixtures" / (le ? "unknown" : exe.filename().string());
    const fs::path mine = root / stamp;
    std::error_code ec;
    if (!fs::exists(mine, ec)) {
      for (const auto& e : fs::directory_iterator(root, ec))
        if (e.path().filename() != stamp) fs::remove_all(e.path(), ec);  // an older build's
      fs::create_directories(mine, ec);
    }
    return mine;
  }();
  return d;
}

// The path of `key`'s file or folder, made by make(path) when this build has not made it yet.
// `key` must name everything make() depends on.
inline fs::path file(const std::string& key, const std::function<void(const fs::path&)>& make) {
  const fs::path p = dir() / key;
  std::error_code ec;
  if (fs::exists(p, ec)) return p;
  const int lock = ::open((dir() / (key + ".lock")).c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);  // released by close (or by the holder's exit)
  struct Unlock {
    int fd;
    ~Unlock() {
      if (fd >= 0) ::close(fd);
    }
  } unlock{lock};
  if (fs::exists(p, ec)) return p;  // made while this process waited
  const fs::path tmp = dir() / (key + ".partial-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  make(tmp);
  fs::rename(tmp, p, ec);
  if (ec) fs::remove_all(tmp, ec);  // another process was first: its copy is the same
  return p;
}

}  // namespace fixture_cache
