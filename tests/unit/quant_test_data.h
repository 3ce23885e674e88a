#pragma once
// Deterministic test data for the quant tests: a fixed-seed RNG, value distributions, edge-case
// blocks and random (but well-formed) quantized blocks.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "runtime/quants/quants.h"

namespace ckjit::test {
using namespace ckjit::quant;

// splitmix64: tiny, deterministic everywhere.
struct Rng {
  uint64_t s;
  uint64_t next() {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  double uniform() { return double(next() >> 11) * 0x1p-53; }  // [0, 1)
  int below(int n) { return int(next() % uint64_t(n)); }
  double normal() {
    const double u1 = 1.0 - uniform(), u2 = uniform();
    return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
  }
};

constexpr int kDistributions = 10;

// Fills n values of one block from distribution `kind`.
inline void fill_block(Rng& rng, int kind, float* x, int n) {
  const double scale = std::pow(10.0, rng.uniform() * 8 - 4);  // 1e-4 .. 1e4
  switch (kind) {
    case 0: for (int i = 0; i < n; ++i) x[i] = float(rng.normal()); break;
    case 1: for (int i = 0; i < n; ++i) x[i] = float(rng.uniform() * 2 - 1); break;
    case 2:  // heavy-tailed: Cauchy, clipped
      for (int i = 0; i < n; ++i) x[i] = float(std::fmax(-1e4, std::fmin(1e4, std::tan(3.14159265 * (rng.uniform() - 0.5)))));
      break;
    case 3: for (int i = 0; i < n; ++i) x[i] = float(rng.normal() * scale); break;
    case 4:  // normal with a few large outliers
      for (int i = 0; i < n; ++i) x[i] = float(rng.normal() * (rng.below(32) == 0 ? 50.0 : 1.0));
      break;
    case 5:  // sparse
      for (int i = 0; i < n; ++i) x[i] = rng.below(4) == 0 ? float(rng.normal()) : 0.0f;
      break;
    case 6: for (int i = 0; i < n; ++i) x[i] = float(std::fabs(rng.normal()) * scale + scale); break;  // all positive
    case 7: for (int i = 0; i < n; ++i) x[i] = float(-std::fabs(rng.normal()) * scale); break;      // all <= 0
    case 8:  // values on a half-integer grid: exercises rounding ties everywhere
      for (int i = 0; i < n; ++i) x[i] = float((rng.below(255) - 127) * 0.5);
      break;
    default:  // uniform with a random offset (asymmetric ranges)
      for (int i = 0; i < n; ++i) x[i] = float((rng.uniform() * 2 - 1 + rng.uniform() * 3 - 1.5) * scale);
      break;
  }
}

// Hand-made edge-case blocks of n values (n = 32 or 256).
inline std::vector<std::vector<float>> edge_blocks(int n) {
  std::vector<std::vector<float>> out;
  auto add = [&](auto gen) { std::vector<float> v(static_cast<size_t>(n)); for (int i = 0; i < n; ++i) v[size_t(i)] = gen(i); out.push_back(v); };
  const float fmax16 = 65504.0f, denorm = std::numeric_limits<float>::denorm_min();
  add([](int) { return 0.0f; });
  add([](int) { return -0.0f; });
  add([](int i) { return i == 5 ? 1e6f : 0.0f; });
  add([](int i) { return i == 9 ? -3e4f : 0.001f * float(i % 7); });
  add([](int) { return 1.0f; });
  add([](int) { return -2.5f; });
  add([](int) { return 1e-30f; });
  add([&](int i) { return (i & 1) ? fmax16 : -fmax16; });
  add([&](int i) { return (i % 3 == 0) ? -fmax16 : fmax16 * 0.25f; });
  add([](int i) { return float(i % 5) * 1e5f; });
  add([](int i) { return float((i * 37) % 19 - 9) * 1e-20f; });
  add([&](int i) { return float(i % 4) * denorm; });
  add([&](int i) { return (i % 2 ? -1.0f : 1.0f) * float(1 + i % 9) * denorm * 1000.0f; });
  add([](int i) { return float((i * 29) % 23 - 11) * 1e-39f; });  // float subnormals
  add([](int i) { return i == 0 ? 7.0f : (i == 1 ? -7.0f : float(i % 13) * 0.3f - 2.0f); });  // +amax first
  add([](int i) { return i == 0 ? -7.0f : (i == 1 ? 7.0f : float(i % 13) * 0.3f - 2.0f); });  // -amax first
  add([](int i) { return (i % 2) ? 3.0f : -3.0f; });
  add([](int i) { return float(i); });  // ramp 0..n-1
  add([](int i) { return -float(i) * 0.5f; });
  add([](int i) { return i < 16 ? 1e-3f : 1e3f; });
  add([](int i) { return float(i % 16) * (1.0f / 15.0f); });  // exact 4-bit grid
  add([](int i) { return float(i % 64 - 32) * 0.125f; });    // exact 6-bit signed grid
  add([](int i) { return std::ldexp(1.0f, (i % 40) - 20); });  // wide dynamic range
  add([](int i) { return i % 32 == 0 ? 1e15f : 1.0f; });
  return out;
}

// Rows of `blocks` blocks of `block_elems` values, mixing all distributions and the edge blocks.
inline std::vector<float> make_values(Rng& rng, int64_t blocks, int block_elems) {
  std::vector<float> x(static_cast<size_t>(blocks * block_elems));
  const auto edges = edge_blocks(block_elems);
  int64_t b = 0;
  for (; b < int64_t(edges.size()) && b < blocks; ++b)
    std::memcpy(&x[size_t(b * block_elems)], edges[size_t(b)].data(), size_t(block_elems) * 4);
  for (; b < blocks; ++b) fill_block(rng, int(b % kDistributions), &x[size_t(b * block_elems)], block_elems);
  return x;
}

inline uint16_t random_finite_f16(Rng& rng, int max_exp = 30) {
  for (;;) {
    const uint16_t h = uint16_t(rng.next());
    if (((h >> 10) & 0x1f) <= max_exp) return h;
  }
}

template <class Block>
inline void random_bytes(Rng& rng, Block* b, int64_t count) {
  auto* p = reinterpret_cast<uint8_t*>(b);
  for (size_t i = 0; i < size_t(count) * sizeof(Block); ++i) p[i] = uint8_t(rng.next());
}

// Random blocks of each type, with finite scales (f16 exponent limited to keep products finite).
inline void randomize(Rng& rng, BlockQ4_K* b, int64_t n) { random_bytes(rng, b, n); for (int64_t i = 0; i < n; ++i) { b[i].d = random_finite_f16(rng, 24); b[i].dmin = random_finite_f16(rng, 24); } }
inline void randomize(Rng& rng, BlockQ5_K* b, int64_t n) { random_bytes(rng, b, n); for (int64_t i = 0; i < n; ++i) { b[i].d = random_finite_f16(rng, 24); b[i].dmin = random_finite_f16(rng, 24); } }
inline void randomize(Rng& rng, BlockQ6_K* b, int64_t n) { random_bytes(rng, b, n); for (int64_t i = 0; i < n; ++i) b[i].d = random_finite_f16(rng, 24); }
inline void randomize(Rng& rng, BlockQ8_0* b, int64_t n) {
  random_bytes(rng, b, n);
  for (int64_t i = 0; i < n; ++i) {
    b[i].d = random_finite_f16(rng, 24);
    // ggml's AVX2 q8_0 dot uses the sign trick, which needs qs != -128; no quantizer produces -128.
    for (auto& q : b[i].qs) if (q == -128) q = -127;
  }
}
inline void randomize(Rng& rng, BlockQ8_K* b, int64_t n) {
  random_bytes(rng, b, n);
  for (int64_t i = 0; i < n; ++i) {
    b[i].d = float(rng.normal() * std::pow(10.0, rng.uniform() * 6 - 5));
    for (auto& q : b[i].qs) if (q == -128) q = -127;
    for (int g = 0; g < 16; ++g) {
      int s = 0;
      for (int l = 0; l < 16; ++l) s += b[i].qs[16 * g + l];
      b[i].bsums[g] = int16_t(s);
    }
  }
}

inline std::string hex_float(float f) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", double(f));
  return buf;
}

inline bool same_bytes(const void* a, const void* b, size_t n) { return std::memcmp(a, b, n) == 0; }

// First mismatching block, for a readable failure.
template <class Block>
int64_t first_diff(const Block* a, const Block* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) if (!same_bytes(&a[i], &b[i], sizeof(Block))) return i;
  return -1;
}

}  // namespace ckjit::test
