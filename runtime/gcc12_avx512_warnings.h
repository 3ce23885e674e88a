#pragma once
// GCC 12's AVX-512 intrinsics (avx512fintrin.h) seed most results with _mm512_undefined_*(), a
// self-initialised `__Y = __Y`, and once such an intrinsic is inlined at -O2 GCC reports that
// value as (maybe) used uninitialised: GCC bug 105593, a false positive (the full-mask builtins
// write every lane; the value is never read), fixed in GCC 13. No source change avoids it:
// _mm512_reduce_add_ps and friends are header code that uses the same helpers. So code that calls
// AVX-512 intrinsics sits between these two macros, which silence exactly those two warnings for
// it, and only on GCC before 13; every other warning stays on there.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
#define CKJIT_AVX512_INTRINSICS_BEGIN                                  \
  _Pragma("GCC diagnostic push")                                       \
  _Pragma("GCC diagnostic ignored \"-Wmaybe-uninitialized\"")          \
  _Pragma("GCC diagnostic ignored \"-Wuninitialized\"")
#define CKJIT_AVX512_INTRINSICS_END _Pragma("GCC diagnostic pop")
#else
#define CKJIT_AVX512_INTRINSICS_BEGIN
#define CKJIT_AVX512_INTRINSICS_END
#endif
