// The 12-byte packing of eight 6-bit scales and eight 6-bit mins used by Q4_K and Q5_K (§4.2).
#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {

void unpack_k4_scales(const uint8_t s[12], uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    mn[j] = s[j + 4] & 63;
  }
  for (int j = 4; j < 8; ++j) {
    sc[j] = uint8_t((s[j + 4] & 15) | ((s[j - 4] >> 6) << 4));
    mn[j] = uint8_t((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

namespace detail {

void pack_k4_scales(const uint8_t sc[8], const uint8_t mn[8], uint8_t s[12]) {
  for (int j = 0; j < 4; ++j) {
    s[j] = uint8_t((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = uint8_t((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = uint8_t((sc[j + 4] & 15) | ((mn[j + 4] & 15) << 4));
  }
}

}  // namespace detail
}  // namespace ckjit::quant
