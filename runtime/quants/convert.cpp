// F16 and BF16 scalar conversions (quants.md §0), bit-identical with ggml's software routines in
// libggml-base (ggml-impl.h), which is what ggml_quantize_chunk and the to_float traits use.
#include "runtime/quants/quant_internal.h"

namespace ckjit::quant {
using detail::bits_float;
using detail::float_bits;

float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  if (exp == 0x1f) {
    // Inf stays inf; NaN keeps its payload and comes out quiet (as F16C and ggml's software do).
    return bits_float(sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0));
  }
  if (exp != 0) return bits_float(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_float(sign);
  // Subnormal half: normalize into a normal float (exact).
  int e = 113;
  while (!(mant & 0x400)) { mant <<= 1; --e; }
  return bits_float(sign | (uint32_t(e) << 23) | ((mant & 0x3ff) << 13));
}

uint16_t f32_to_f16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000);
  const uint32_t a = u & 0x7fffffff;
  if (a > 0x7f800000) return sign | 0x7e00;  // NaN -> canonical quiet NaN, sign kept (ggml base)
  if (a >= 0x477ff000) return sign | 0x7c00;  // >= 65520 rounds to infinity (and inf itself)
  if (a >= 0x38800000) {                       // result is a normal half (>= 2^-14)
    // Rebias the exponent and round the 13 dropped mantissa bits to nearest even; a carry out of
    // the mantissa correctly bumps the exponent.
    const uint32_t v = a - ((127 - 15) << 23);
    const uint32_t r = (v + 0x0fff + ((v >> 13) & 1)) >> 13;
    return uint16_t(sign | r);
  }
  if (a < 0x33000000) return sign;  // below half the smallest subnormal (2^-25): rounds to zero
  // Subnormal half: value = m * 2^-24 with m = round_even(a_value * 2^24).
  const uint32_t exp = a >> 23;
  const uint32_t mant = (a & 0x7fffff) | 0x800000;  // 24-bit significand
  const uint32_t shift = 126 - exp;                 // 14..24 for exp in 102..112
  const uint32_t q = mant >> shift;
  const uint32_t rem = mant & ((1u << shift) - 1);
  const uint32_t half = 1u << (shift - 1);
  const uint32_t r = q + ((rem > half || (rem == half && (q & 1))) ? 1 : 0);
  return uint16_t(sign | r);
}

float bf16_to_f32(uint16_t b) { return bits_float(uint32_t(b) << 16); }

uint16_t f32_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffff) > 0x7f800000) return uint16_t((u >> 16) | 0x40);  // NaN: force quiet
  return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);               // round to nearest even
}

}  // namespace ckjit::quant
