#pragma once
// Checks a JPEG's Huffman tables before stb_image sees them, for two faults of Debian's stb_image
// 2.27 found by tests/fuzz's image target: it writes past its 257-entry size table when a DHT
// segment lists more than 256 codes, and it decodes a scan with a table no DHT defined, reading
// uninitialised memory as indices. Walks the markers the way stb does (stray bytes before the frame,
// tables between scans, entropy-coded data skipped, bytes past the end read as 0) without decoding
// anything. A CI fuzz run (session 7) found a table the first version of this walk missed: it gave
// up earlier than stb, at stray bytes and at a table running past the file's end.
#include <cstdint>
#include <span>
#include <string>

namespace ckjit::image {

// Error naming `name` for a Huffman table with more than 256 codes that stb would read, or a scan
// that stb would decode with an undefined table.
void check_jpeg_huffman_tables(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace ckjit::image
