// Bit-exact parity of runtime/quants with llama.cpp's own ggml (prebuilt libggml-base.so and the
// AVX2 "haswell" libggml-cpu variant from @node-llama-cpp/linux-x64, see ggml_peer.h):
//  * weight quantizers  vs ggml_quantize_chunk (no importance matrix): F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K
//  * activation quantizers vs the CPU traits' from_float: quantize_row_q8_K, x86 quantize_row_q8_0
//  * dequantizers       vs ggml_get_type_traits(type)->to_float
//  * dot products       vs the CPU traits' vec_dot, i.e. the AVX2 kernels ggml_vec_dot_q4_K_q8_K,
//    ggml_vec_dot_q5_K_q8_K, ggml_vec_dot_q6_K_q8_K, ggml_vec_dot_q8_0_q8_0 (quants.md §8.3-8.5, 8.7)
// Inputs: a fixed-seed RNG over several value distributions, hand-made edge-case blocks, and (for
// dequantizers and dot products) blocks of random bytes. Every comparison is of raw bits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "ggml_peer.h"
#include "quant_test_data.h"
#include "runtime/quants/quants.h"

using namespace ckjit;
using namespace ckjit::quant;
using namespace ckjit::test;

namespace {

void report(const char* type, const char* check, int64_t items, const char* unit) {
  MESSAGE(std::string(type) << " " << std::string(check) << ": " << items << " " << std::string(unit) << " bit-identical");
  std::printf("[parity] %-5s %-40s %10lld %s identical\n", type, check, static_cast<long long>(items), unit);
}

constexpr int64_t kChunk = 4096;  // blocks per library call

// Weight quantizer parity: ckjit quantize_row vs ggml_quantize_chunk. Returns the blocks compared.
template <class Block>
int64_t check_weight_quantizer(const GgmlPeer& g, TensorType type, int block_elems, int64_t blocks, uint64_t seed,
                               std::vector<Block>* keep) {
  Rng rng{seed};
  int64_t done = 0;
  while (done < blocks) {
    const int64_t nb = std::min(kChunk, blocks - done);
    const std::vector<float> x = make_values(rng, nb, block_elems);
    std::vector<Block> mine(static_cast<size_t>(nb)), theirs(static_cast<size_t>(nb));
    quantize_row(type, x.data(), mine.data(), nb * block_elems);
    // One block per row is the general case for quantize_chunk (rows are quantized independently).
    g.quantize_chunk(int(type), x.data(), theirs.data(), 0, nb, block_elems, nullptr);
    const int64_t bad = first_diff(mine.data(), theirs.data(), nb);
    if (bad >= 0) {
      std::string vals;
      for (int j = 0; j < std::min(block_elems, 8); ++j) vals += std::to_string(x[size_t(bad * block_elems + j)]) + " ";
      FAIL_CHECK(tensor_type_name(int32_t(type)) << " quantize mismatch in block " << done + bad << " (first values " << vals << ")");
      return done;
    }
    if (keep) keep->insert(keep->end(), mine.begin(), mine.end());
    done += nb;
  }
  return done;
}

// Dequantizer parity for arbitrary blocks. Returns the values compared.
template <class Block>
int64_t check_dequant(const GgmlPeer& g, TensorType type, int block_elems, const Block* blocks, int64_t n) {
  std::vector<float> mine(static_cast<size_t>(n * block_elems)), theirs(static_cast<size_t>(n * block_elems));
  dequantize_row(type, blocks, mine.data(), n * block_elems);
  g.to_float(int(type))(blocks, theirs.data(), n * block_elems);
  for (int64_t i = 0; i < n * block_elems; ++i) {
    if (!same_bytes(&mine[size_t(i)], &theirs[size_t(i)], 4)) {
      FAIL_CHECK(tensor_type_name(int32_t(type)) << " dequantize mismatch at element " << i << ": " << hex_float(mine[size_t(i)])
                                                 << " vs ggml " << hex_float(theirs[size_t(i)]));
      return i;
    }
  }
  return n * block_elems;
}

// Dot-product parity over rows of random length (1..16 super-blocks / 1..64 Q8_0 blocks).
template <class W, class A, class Dot>
int64_t check_dots(const GgmlPeer& g, int wtype, const char* name, int block_elems, const W* w, const A* a, int64_t nblocks,
                   Dot mine, Rng& rng, int max_row_blocks, int64_t* dots) {
  const auto vec_dot = g.type_traits_cpu(wtype)->vec_dot;
  int64_t pos = 0;
  while (pos < nblocks) {
    const int64_t len = std::min<int64_t>(1 + rng.below(max_row_blocks), nblocks - pos);
    const int n = int(len * block_elems);
    float theirs = 0;
    vec_dot(n, &theirs, 0, w + pos, 0, a + pos, 0, 1);
    const float ours = mine(w + pos, a + pos, n);
    if (!same_bytes(&ours, &theirs, 4)) {
      FAIL_CHECK(std::string(name) << " dot mismatch at blocks " << pos << ".." << pos + len - 1 << ": " << hex_float(ours) << " vs ggml "
                                << hex_float(theirs));
      return pos;
    }
    ++*dots;
    pos += len;
  }
  return nblocks;
}

// The whole parity run with `blocks` blocks per type and check.
void run_parity(int64_t blocks) {
  const GgmlPeer& g = ggml_peer();
  if (!g.error.empty()) FAIL(g.error);
  MESSAGE("llama.cpp ggml " << g.version);
  std::printf("[parity] against ggml %s, %lld blocks per check\n", g.version.c_str(), static_cast<long long>(blocks));

  // F16 and BF16 element conversions (a "block" is one element; compare blocks*32 values).
  {
    Rng rng{101};
    const int64_t n = blocks * 32;
    std::vector<float> x = make_values(rng, n / 32, 32);
    // Add every f16-boundary neighbourhood: halfway points and their float neighbours.
    for (uint32_t h = 0; h < 0x7c00; h += 7) {
      const float a = f16_to_f32(uint16_t(h)), b = f16_to_f32(uint16_t(h + 1)), mid = (a + b) * 0.5f;
      x.push_back(mid); x.push_back(std::nextafter(mid, 0.0f)); x.push_back(std::nextafter(mid, 1e9f)); x.push_back(-mid);
    }
    // Specials: infinities, NaNs with payloads (ggml's software conversion in libggml-base drops the
    // payload for F16 and keeps it, quieted, for BF16), the f16 overflow threshold, float subnormals.
    for (uint32_t u : {0x7f800000u, 0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa5a5a5u, 0xff812345u,
                       0x477fefffu, 0x477ff000u, 0x477ff001u, 0x00000001u, 0x80000001u, 0x007fffffu, 0x33000000u,
                       0x33000001u, 0x387fc000u, 0x387fe000u}) {
      float f;
      std::memcpy(&f, &u, 4);
      x.push_back(f);
    }
    while (x.size() % 32) x.push_back(0.0f);
    std::vector<uint16_t> mine(x.size()), theirs(x.size());
    for (TensorType t : {TensorType::F16, TensorType::BF16}) {
      quantize_row(t, x.data(), mine.data(), int64_t(x.size()));
      g.quantize_chunk(int(t), x.data(), theirs.data(), 0, int64_t(x.size() / 32), 32, nullptr);
      int64_t bad = -1;
      for (size_t i = 0; i < x.size() && bad < 0; ++i) if (mine[i] != theirs[i]) bad = int64_t(i);
      if (bad >= 0) FAIL_CHECK(tensor_type_name(int32_t(t)) << " conversion mismatch for " << hex_float(x[size_t(bad)]));
      else report(tensor_type_info(t).name, "quantize (ggml_quantize_chunk)", int64_t(x.size()), "values");
      // Dequantize every bit pattern.
      std::vector<uint16_t> all(65536);
      for (uint32_t i = 0; i < 65536; ++i) all[i] = uint16_t(i);
      const int64_t cmp = check_dequant(g, t, 1, all.data(), 65536);
      if (cmp == 65536) report(tensor_type_info(t).name, "dequantize all 65536 bit patterns", cmp, "values");
    }
  }

  // Weight quantizers, then dequantizers on their output and on random bytes.
  std::vector<BlockQ4_K> q4; std::vector<BlockQ5_K> q5; std::vector<BlockQ6_K> q6; std::vector<BlockQ8_0> q80;
  {
    int64_t c = check_weight_quantizer(g, TensorType::Q8_0, 32, blocks, 201, &q80);
    if (c == blocks) report("Q8_0", "quantize (ggml_quantize_chunk)", c, "blocks");
    c = check_weight_quantizer(g, TensorType::Q4_K, 256, blocks, 202, &q4);
    if (c == blocks) report("Q4_K", "quantize (ggml_quantize_chunk)", c, "blocks");
    c = check_weight_quantizer(g, TensorType::Q5_K, 256, blocks, 203, &q5);
    if (c == blocks) report("Q5_K", "quantize (ggml_quantize_chunk)", c, "blocks");
    c = check_weight_quantizer(g, TensorType::Q6_K, 256, blocks, 204, &q6);
    if (c == blocks) report("Q6_K", "quantize (ggml_quantize_chunk)", c, "blocks");
  }

  // Activation quantizers (CPU traits from_float = quantize_row_q8_K / x86 quantize_row_q8_0).
  std::vector<BlockQ8_K> a8k; std::vector<BlockQ8_0> a80;
  {
    Rng rng{301};
    const auto from_q8k = g.type_traits_cpu(test::kQ8_K)->from_float;
    const auto from_q80 = g.type_traits_cpu(test::kQ8_0)->from_float;
    int64_t done8k = 0, done80 = 0;
    for (int64_t done = 0; done < blocks;) {
      const int64_t nb = std::min(kChunk, blocks - done);
      const std::vector<float> x = make_values(rng, nb, 256);
      std::vector<BlockQ8_K> mine(static_cast<size_t>(nb)), theirs(static_cast<size_t>(nb));
      std::memset(theirs.data(), 0, theirs.size() * sizeof(BlockQ8_K));  // ggml leaves bsums of zero blocks untouched
      quantize_row_q8_K(x.data(), mine.data(), nb * 256);
      from_q8k(x.data(), theirs.data(), nb * 256);
      if (first_diff(mine.data(), theirs.data(), nb) >= 0) { FAIL_CHECK("Q8_K activation mismatch in block " << done + first_diff(mine.data(), theirs.data(), nb)); break; }
      a8k.insert(a8k.end(), mine.begin(), mine.end());
      done8k += nb;
      // The same values as 8x as many Q8_0 blocks.
      std::vector<BlockQ8_0> m0(static_cast<size_t>(nb * 8)), t0(static_cast<size_t>(nb * 8));
      quantize_row_q8_0_x86(x.data(), m0.data(), nb * 256);
      from_q80(x.data(), t0.data(), nb * 256);
      if (first_diff(m0.data(), t0.data(), nb * 8) >= 0) { FAIL_CHECK("Q8_0 x86 activation mismatch in block " << done * 8 + first_diff(m0.data(), t0.data(), nb * 8)); break; }
      a80.insert(a80.end(), m0.begin(), m0.end());
      done80 += nb * 8;
      done += nb;
    }
    if (done8k == blocks) report("Q8_K", "activation quantize (quantize_row_q8_K)", done8k, "blocks");
    if (done80 == blocks * 8) report("Q8_0", "activation quantize (x86 quantize_row_q8_0)", done80, "blocks");
  }

  // Dequantizers: on quantizer output and on random bytes.
  {
    Rng rng{401};
    auto both = [&](TensorType t, int be, auto& quantized) {
      using Block = typename std::decay_t<decltype(quantized)>::value_type;
      int64_t cmp = check_dequant(g, t, be, quantized.data(), int64_t(quantized.size()));
      std::vector<Block> rnd(quantized.size());
      randomize(rng, rnd.data(), int64_t(rnd.size()));
      cmp += check_dequant(g, t, be, rnd.data(), int64_t(rnd.size()));
      if (cmp == int64_t(quantized.size()) * 2 * be)
        report(tensor_type_info(t).name, "dequantize (to_float; quantized + random)", int64_t(quantized.size()) * 2, "blocks");
    };
    both(TensorType::Q8_0, 32, q80);
    both(TensorType::Q4_K, 256, q4);
    both(TensorType::Q5_K, 256, q5);
    both(TensorType::Q6_K, 256, q6);
    both(TensorType::Q8_K, 256, a8k);
  }

  // Dot products: quantized weights x quantized activations, and random blocks x random blocks.
  {
    Rng rng{501};
    auto run = [&](int wtype, const char* name, int be, auto& w, auto& a, auto mine, int max_row) {
      using WB = typename std::decay_t<decltype(w)>::value_type;
      using AB = typename std::decay_t<decltype(a)>::value_type;
      const int64_t n = int64_t(std::min(w.size(), a.size()));
      int64_t dots = 0;
      int64_t cmp = check_dots(g, wtype, name, be, w.data(), a.data(), n, mine, rng, max_row, &dots);
      std::vector<WB> rw(static_cast<size_t>(n)); std::vector<AB> ra(static_cast<size_t>(n));
      randomize(rng, rw.data(), n); randomize(rng, ra.data(), n);
      cmp += check_dots(g, wtype, name, be, rw.data(), ra.data(), n, mine, rng, max_row, &dots);
      if (cmp == 2 * n) report(name, ("vec_dot (AVX2 ggml kernel), " + std::to_string(2 * n) + " blocks").c_str(), dots, "dots");
    };
    run(test::kQ4_K, "Q4_K", 256, q4, a8k, [](const BlockQ4_K* x, const BlockQ8_K* y, int n) { return vec_dot_q4_K_q8_K(x, y, n); }, 16);
    run(test::kQ5_K, "Q5_K", 256, q5, a8k, [](const BlockQ5_K* x, const BlockQ8_K* y, int n) { return vec_dot_q5_K_q8_K(x, y, n); }, 16);
    run(test::kQ6_K, "Q6_K", 256, q6, a8k, [](const BlockQ6_K* x, const BlockQ8_K* y, int n) { return vec_dot_q6_K_q8_K(x, y, n); }, 16);
    run(test::kQ8_0, "Q8_0", 32, q80, a80, [](const BlockQ8_0* x, const BlockQ8_0* y, int n) { return vec_dot_q8_0_q8_0(x, y, n); }, 64);
  }
}

}  // namespace

// The full run takes ~15 s in Release and ~45 s under ASan+UBSan (2 cores), so it lives in suite
// "slow" (skipped by the sanitizer runs); suite "parity" keeps the same checks on fewer blocks.
TEST_SUITE("parity") {
TEST_CASE("quant parity with llama.cpp ggml (8192 blocks per type)") { run_parity(8192); }
}

TEST_SUITE("slow") {
TEST_CASE("quant parity with llama.cpp ggml (102400 blocks per type)") { run_parity(102400); }
}
