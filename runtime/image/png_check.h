#pragma once
// Checks a PNG's chunk lengths before stb_image sees them: stb grows its compressed-data buffer to
// the length an IDAT chunk claims before reading it, so a 90-byte file claiming a 1.2 GB chunk made
// it allocate 2 GiB (found by tests/fuzz's image target). A chunk that runs past the end of the file
// is refused here; stb could never decode such a file (it needs every IDAT byte and the IEND after).
#include <cstdint>
#include <span>
#include <string>

namespace ckjit::image {

// Error naming `name` for a chunk, before IEND, whose data and CRC run past the end of the bytes.
void check_png_chunk_lengths(std::span<const uint8_t> bytes, const std::string& name);

}  // namespace ckjit::image
