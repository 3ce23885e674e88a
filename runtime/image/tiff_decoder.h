#pragma once
// TIFF pages from memory (Debian's libtiff): a TIFF holds one or more pages (directories), each read
// to 8-bit RGB through libtiff's RGBA interface (every photometric, bit depth and compression it
// supports; alpha dropped as elsewhere). libtiff's messages are kept per file, not printed, and its
// single allocations are capped so a hostile header cannot ask for gigabytes.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ckjit::image::tiff {

struct PageSize {
  int64_t width = 0, height = 0;
};

// Every page's size from its directory, in file order (at most `max_pages`); throws ckjit::Error
// naming `name` when the file cannot be opened or a directory cannot be read or decoded.
std::vector<PageSize> page_sizes(std::span<const uint8_t> bytes, const std::string& name, size_t max_pages);

// The 0-based page as w x h RGB triples (the caller checked the size against its limits); throws
// ckjit::Error naming `name` and libtiff's reason.
std::vector<uint8_t> decode_rgb(std::span<const uint8_t> bytes, const std::string& name, int page, size_t max_alloc);

}  // namespace ckjit::image::tiff
