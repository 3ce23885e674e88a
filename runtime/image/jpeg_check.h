#pragma once
// Checks a JPEG's Huffman tables before stb_image sees them: Debian's stb_image writes past its
// 257-entry size table when a DHT segment lists more than 256 codes (found by tests/fuzz's image
// target), so such a file must be refused here. Walks the markers (and skips entropy-coded data
// after each SOS) without decoding anything.
#include <cstdint>
#include <span>
#include <string>

namespace ckjit::image {

// Error naming `name` for a Huffman table with more than 256 codes or one that overruns its segment.
void check_jpeg_huffman_tables(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace ckjit::image
