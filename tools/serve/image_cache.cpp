#include "tools/serve/image_cache.h"

#include <openssl/evp.h>

#include <stdexcept>

namespace ckjit::serve {

std::string sha256_hex(std::string_view bytes) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!EVP_Digest(bytes.data(), bytes.size(), md, &n, EVP_sha256(), nullptr)) throw std::runtime_error("SHA-256 failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned i = 0; i < n; ++i) out += hex[md[i] >> 4], out += hex[md[i] & 15];
  return out;
}

std::string image_key(std::string_view bytes, int min_tokens, int max_tokens) {
  return sha256_hex(bytes) + "/" + std::to_string(min_tokens) + "-" + std::to_string(max_tokens);
}

std::shared_ptr<EncodedImage> ImageCache::get(const std::string& key) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = index_.find(key);
  if (it == index_.end()) {
    ++stats_.misses;
    return nullptr;
  }
  ++stats_.hits;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->image;
}

void ImageCache::put(const std::string& key, std::shared_ptr<EncodedImage> image) {
  const size_t bytes = ckjit_image_bytes(image->handle);
  std::lock_guard<std::mutex> l(mu_);
  if (bytes > max_bytes_ || index_.count(key)) return;  // too big, or another request put it first
  while (!lru_.empty() && stats_.bytes + bytes > max_bytes_) {
    stats_.bytes -= lru_.back().bytes;
    index_.erase(lru_.back().key);
    lru_.pop_back();
    ++stats_.evictions;
  }
  lru_.push_front({key, std::move(image), bytes});
  index_[key] = lru_.begin();
  stats_.bytes += bytes;
}

ImageCache::Stats ImageCache::stats() const {
  std::lock_guard<std::mutex> l(mu_);
  Stats s = stats_;
  s.entries = lru_.size();
  return s;
}

}  // namespace ckjit::serve
