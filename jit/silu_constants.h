#pragma once
// The exp/silu approximation shared by the SwiGLU epilogues and their scalar reference, so that
// JIT and reference results are bit-identical. silu(g) = g / (1 + exp(-g)), with
//   x = clamp(-g, kExpLo, kExpHi); n = round_half_even(x * log2e);
//   r = fma(n, -ln2_hi, x); r = fma(n, -ln2_lo, r);
//   p = Horner(r) over kExpPoly (highest degree first, each step p = fma(p, r, c));
//   exp = p * 2^n (vscalefps / ldexp); out = (g / (1 + exp)) * u.
namespace ckjit::jit {

constexpr float kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f;
constexpr float kLn2Lo = -2.12194440e-4f;
constexpr float kExpLo = -87.0f, kExpHi = 88.0f;
constexpr float kExpPoly[8] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f,
                               1.6666665459e-1f, 5.0000001201e-1f, 1.0f,             1.0f};

}  // namespace ckjit::jit
