#include "runtime/image/png_check.h"

#include <cstring>

#include "runtime/error.h"

namespace ckjit::image {

void check_png_chunk_lengths(std::span<const uint8_t> b, const std::string& name) {
  // Signature (8 bytes), then chunks: length (4, big-endian), type (4), data, CRC (4); stb reads them
  // in order and stops at IEND.
  for (size_t i = 8; i + 8 <= b.size();) {
    const uint64_t len = uint64_t(b[i]) << 24 | uint64_t(b[i + 1]) << 16 | uint64_t(b[i + 2]) << 8 | b[i + 3];
    const bool iend = std::memcmp(&b[i + 4], "IEND", 4) == 0;
    const uint64_t left = b.size() - i - 8;
    if (len > left || (!iend && len + 4 > left)) {
      const std::string type = printable_ascii(std::string(reinterpret_cast<const char*>(&b[i + 4]), 4));
      throw Error(name + ": truncated or corrupt PNG: chunk '" + type + "' claims " + std::to_string(len) +
                  " bytes, the file has " + std::to_string(left) + " after its header");
    }
    if (iend) return;
    i += 12 + size_t(len);
  }
}

}  // namespace ckjit::image
