#pragma once
// Encoded images (C API handles) by a key of the image bytes' SHA-256 and the preprocessing
// settings, least recently used evicted first beyond a byte budget. Entries are shared_ptrs: one
// evicted while a request still uses it lives until that request ends.
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "include/ckjit.h"

namespace ckjit::serve {

// Owns one ckjit_image handle.
struct EncodedImage {
  explicit EncodedImage(ckjit_image* h) : handle(h) {}
  ~EncodedImage() { ckjit_image_free(handle); }
  EncodedImage(const EncodedImage&) = delete;
  EncodedImage& operator=(const EncodedImage&) = delete;
  ckjit_image* handle;
};

std::string sha256_hex(std::string_view bytes);
// The cache key: what the rows depend on besides the model (which is one per server).
std::string image_key(std::string_view bytes, int min_tokens, int max_tokens);

class ImageCache {
 public:
  explicit ImageCache(size_t max_bytes) : max_bytes_(max_bytes) {}
  // A hit counts and moves the entry to the front; a miss counts.
  std::shared_ptr<EncodedImage> get(const std::string& key);
  // An image larger than the whole budget is not kept.
  void put(const std::string& key, std::shared_ptr<EncodedImage> image);

  struct Stats {
    uint64_t hits = 0, misses = 0, evictions = 0;
    size_t bytes = 0, entries = 0;
  };
  Stats stats() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<EncodedImage> image;
    size_t bytes;
  };
  mutable std::mutex mu_;
  size_t max_bytes_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
  Stats stats_;
};

}  // namespace ckjit::serve
