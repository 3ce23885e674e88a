#include "runtime/image/stb_decoder.h"

#include <cstdlib>

#include "runtime/error.h"

namespace {

// The cap of the decode running on this thread (0: no decode running, no cap) and whether it was hit.
thread_local size_t g_max_alloc = 0;
thread_local bool g_over_cap = false;

bool over_cap(size_t n) {
  if (g_max_alloc == 0 || n <= g_max_alloc) return false;
  g_over_cap = true;
  return true;
}
void* capped_malloc(size_t n) { return over_cap(n) ? nullptr : std::malloc(n); }
[[maybe_unused]] void* capped_realloc(void* p, size_t n) { return over_cap(n) ? nullptr : std::realloc(p, n); }

}  // namespace

// Only BMP, which Debian has no library for (PNG, JPEG and GIF go through libpng, libjpeg-turbo and
// giflib): no code for the others.
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_BMP
#define STBI_NO_ZLIB  // zlib is PNG's, which libpng decodes
#define STBI_NO_STDIO
#define STBI_MALLOC(n) capped_malloc(n)
#define STBI_REALLOC(p, n) capped_realloc(p, n)
#define STBI_FREE(p) std::free(p)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wunused-function"  // the PNG and GIF entry points stb declares for every build
#endif
#include <stb_image.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

namespace ckjit::image::stb {

bool info(std::span<const uint8_t> bytes, Info& out) {
  return stbi_info_from_memory(bytes.data(), int(bytes.size()), &out.width, &out.height, &out.channels) != 0;
}

Pixels decode_rgb(std::span<const uint8_t> bytes, size_t max_alloc) {
  g_max_alloc = max_alloc, g_over_cap = false;
  Pixels p;
  int channels = 0;
  p.rgb = {stbi_load_from_memory(bytes.data(), int(bytes.size()), &p.width, &p.height, &channels, 3), stbi_image_free};
  p.over_cap = !p.rgb && g_over_cap;
  g_max_alloc = 0;
  return p;
}

std::string failure_reason() {
  const char* r = stbi_failure_reason();
  return printable_ascii(r ? r : "unknown");
}

}  // namespace ckjit::image::stb
