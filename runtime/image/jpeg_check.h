#pragma once
// Checks a JPEG's Huffman tables before stb_image sees them: Debian's stb_image writes past its
// 257-entry size table when a DHT segment lists more than 256 codes (found by tests/fuzz's image
// target), so such a file must be refused here. Walks the markers the way stb 2.27 does (stray bytes
// before the frame, tables between scans, entropy-coded data skipped, bytes past the end read as 0)
// without decoding anything. A second fuzzer finding (CI, session 7) came from the first version of
// this walk giving up earlier than stb: at stray bytes and at a table running past the file's end.
#include <cstdint>
#include <span>
#include <string>

namespace ckjit::image {

// Error naming `name` for a Huffman table with more than 256 codes that stb would read.
void check_jpeg_huffman_tables(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace ckjit::image
