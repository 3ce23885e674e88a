#pragma once
// The exp of the attention tile (Cephes-style range reduction and polynomial; ~1 ulp): one set of
// constants for the 8- and 16-lane x86 copies (tile_softmax.h) and the portable twin
// (tile_softmax_twin.h), whose lane-wise operations must stay the same.
namespace ckjit::jit::exp_poly {

constexpr float kMin = -88.0f, kMax = 88.0f, kLog2e = 1.44269504088896341f;
constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
constexpr float kP[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f, 4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};

}  // namespace ckjit::jit::exp_poly
