// Bit-exact parity of the repacked-Q4_K float orders (quants.h vec_dot_q4_K_q8_K_repack_gemv/gemm,
// quantize_row_q8_K_repack; quants.md §7.2, §8.6) with llama.cpp's AVX2 kernels
// ggml_gemv_q4_K_8x8_q8_K, ggml_gemm_q4_K_8x8_q8_K and ggml_quantize_mat_q8_K_4x8 from the prebuilt
// "haswell" libggml-cpu (the kernels llama.cpp runs by default for Q4_K weights on AVX2 CPUs).
// The weights are interleaved here into ggml's block_q4_Kx8 layout (8 rows) so the library kernels
// can be called directly; ckjit's functions take the plain blocks.
#include <doctest/doctest.h>

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

// ggml's interleaved layouts (repack.h): 8 weight rows / 4 activation rows per super-block.
struct BlockQ4_Kx8 { uint16_t d[8], dmin[8]; uint8_t scales[96]; uint8_t qs[1024]; };
struct BlockQ8_Kx4 { float d[4]; int8_t qs[1024]; int16_t bsums[64]; };
static_assert(sizeof(BlockQ4_Kx8) == 1152 && sizeof(BlockQ8_Kx4) == 1168);

using GemmFn = void (*)(int n, float* s, size_t bs, const void* vx, const void* vy, int nr, int nc);
using QuantizeMatFn = void (*)(const float* x, void* vy, int64_t k);

// Interleaves super-block b of 8 rows: quants in 8-byte chunks round-robin over the rows; per
// sub-block, the 8 rows' 6-bit scale/min pairs packed like one Q4_K scales array (§4.2).
BlockQ4_Kx8 interleave_q4_K(const BlockQ4_K* rows[8], int64_t b) {
  BlockQ4_Kx8 out;
  uint8_t sc[8][8], mn[8][8];  // [row][sub-block]
  for (int r = 0; r < 8; ++r) {
    const BlockQ4_K& in = rows[r][b];
    out.d[r] = in.d;
    out.dmin[r] = in.dmin;
    unpack_k4_scales(in.scales, sc[r], mn[r]);
  }
  for (int i = 0; i < 128; ++i) std::memcpy(&out.qs[8 * i], &rows[i % 8][b].qs[(i / 8) * 8], 8);
  for (int s = 0; s < 8; ++s) {
    uint8_t* o = &out.scales[12 * s];
    for (int j = 0; j < 4; ++j) {
      o[j] = uint8_t((sc[j][s] & 63) | ((sc[j + 4][s] >> 4) << 6));
      o[j + 4] = uint8_t((mn[j][s] & 63) | ((mn[j + 4][s] >> 4) << 6));
      o[j + 8] = uint8_t((sc[j + 4][s] & 15) | ((mn[j + 4][s] & 15) << 4));
    }
  }
  return out;
}

// Row r of ggml's 4-row interleaved activations as a plain Q8_K block (qs in 8-byte chunks
// round-robin over the rows; bsums[16*(g/4) + 4*r + g%4] holds group g of row r).
BlockQ8_K deinterleave_q8_K(const BlockQ8_Kx4& in, int r) {
  BlockQ8_K out;
  out.d = in.d[r];
  for (int e = 0; e < 256; ++e) out.qs[e] = in.qs[32 * (e / 8) + 8 * r + e % 8];
  for (int g = 0; g < 16; ++g) out.bsums[g] = in.bsums[16 * (g / 4) + 4 * r + g % 4];
  return out;
}

void report(const char* check, int64_t items, const char* unit) {
  MESSAGE("Q4_K repack " << std::string(check) << ": " << items << " " << std::string(unit) << " bit-identical");
  std::printf("[parity] Q4_K  %-42s %10lld %s identical\n", check, static_cast<long long>(items), unit);
}

void run_repack_parity(int trials) {
  const GgmlPeer& g = ggml_peer();
  if (!g.error.empty()) FAIL(g.error);
  const auto gemv = reinterpret_cast<GemmFn>(g.symbol("ggml_gemv_q4_K_8x8_q8_K"));
  const auto gemm = reinterpret_cast<GemmFn>(g.symbol("ggml_gemm_q4_K_8x8_q8_K"));
  const auto quantize_mat = reinterpret_cast<QuantizeMatFn>(g.symbol("ggml_quantize_mat_q8_K_4x8"));
  REQUIRE_MESSAGE((gemv && gemm && quantize_mat), "libggml-cpu-haswell.so lacks the repacked Q4_K kernels");

  Rng rng{777};
  int64_t gemv_dots = 0, gemm_dots = 0, act_blocks = 0, weight_blocks = 0;
  for (int t = 0; t < trials; ++t) {
    const int nb = 1 + rng.below(8);  // super-blocks per row
    const int n = nb * QK_K;
    const int ncols = 8 * (1 + rng.below(2));            // weight rows: one or two groups of 8
    const int nrows = (rng.below(2) ? 4 : 16);          // activation rows: gemm in 4s or 16s
    // Weights: quantized values or (every third trial) random blocks.
    std::vector<BlockQ4_K> w(static_cast<size_t>(ncols * nb));
    if (t % 3 == 2) {
      randomize(rng, w.data(), int64_t(w.size()));
    } else {
      const std::vector<float> wf = make_values(rng, ncols * nb, QK_K);
      quantize_row(TensorType::Q4_K, wf.data(), w.data(), int64_t(wf.size()));
    }
    weight_blocks += int64_t(w.size());
    std::vector<BlockQ4_Kx8> wx(static_cast<size_t>(ncols / 8 * nb));
    for (int c = 0; c < ncols / 8; ++c) {
      const BlockQ4_K* rows[8];
      for (int r = 0; r < 8; ++r) rows[r] = &w[static_cast<size_t>((8 * c + r) * nb)];
      for (int b = 0; b < nb; ++b) wx[static_cast<size_t>(c * nb + b)] = interleave_q4_K(rows, b);
    }
    // Activations: sometimes with +amax and -amax both present, -amax first (§7.2 sign rule).
    std::vector<float> a = make_values(rng, nrows * nb, QK_K);
    if (t % 4 == 1) {
      for (int b = 0; b < nrows * nb; ++b) { a[static_cast<size_t>(256 * b + 3)] = -100.0f; a[static_cast<size_t>(256 * b + 200)] = 100.0f; }
    }
    // gemm: activations quantized 4 rows at a time by ggml; ours per row.
    std::vector<BlockQ8_Kx4> ax(static_cast<size_t>(nrows / 4 * nb));
    for (int q = 0; q < nrows / 4; ++q) quantize_mat(&a[static_cast<size_t>(4 * q * n)], &ax[static_cast<size_t>(q * nb)], n);
    std::vector<BlockQ8_K> mine_a(static_cast<size_t>(nrows * nb));
    for (int r = 0; r < nrows; ++r) quantize_row_q8_K_repack(&a[static_cast<size_t>(r * n)], &mine_a[static_cast<size_t>(r * nb)], n);
    for (int r = 0; r < nrows; ++r) {
      for (int b = 0; b < nb; ++b) {
        const BlockQ8_K theirs = deinterleave_q8_K(ax[static_cast<size_t>((r / 4) * nb + b)], r % 4);
        if (!same_bytes(&theirs, &mine_a[static_cast<size_t>(r * nb + b)], sizeof theirs)) {
          FAIL("activation (ggml_quantize_mat_q8_K_4x8) mismatch: trial " << t << " row " << r << " block " << b);
        }
        ++act_blocks;
      }
    }
    std::vector<float> out(static_cast<size_t>(nrows * ncols));
    gemm(n, out.data(), size_t(ncols), wx.data(), ax.data(), nrows, ncols);
    for (int r = 0; r < nrows; ++r) {
      for (int c = 0; c < ncols; ++c) {
        const float ours = vec_dot_q4_K_q8_K_repack_gemm(&w[static_cast<size_t>(c * nb)], &mine_a[static_cast<size_t>(r * nb)], n);
        const float theirs = out[static_cast<size_t>(r * ncols + c)];
        if (!same_bytes(&ours, &theirs, 4))
          FAIL("gemm mismatch: trial " << t << " row " << r << " col " << c << ": " << hex_float(ours) << " vs ggml " << hex_float(theirs));
        ++gemm_dots;
      }
    }
    // gemv: one activation row quantized with the reference Q8_K quantizer.
    std::vector<BlockQ8_K> a1(static_cast<size_t>(nb));
    quantize_row_q8_K(a.data(), a1.data(), n);
    gemv(n, out.data(), 0, wx.data(), a1.data(), 1, ncols);
    for (int c = 0; c < ncols; ++c) {
      const float ours = vec_dot_q4_K_q8_K_repack_gemv(&w[static_cast<size_t>(c * nb)], a1.data(), n);
      if (!same_bytes(&ours, &out[static_cast<size_t>(c)], 4))
        FAIL("gemv mismatch: trial " << t << " col " << c << ": " << hex_float(ours) << " vs ggml " << hex_float(out[static_cast<size_t>(c)]));
      ++gemv_dots;
    }
  }
  MESSAGE("Q4_K repack: " << trials << " trials over " << weight_blocks << " weight blocks");
  std::printf("[parity] Q4_K  repack: %d trials over %lld weight blocks\n", trials, static_cast<long long>(weight_blocks));
  report("activations (quantize_mat_q8_K_4x8)", act_blocks, "blocks");
  report("gemm dots (ggml_gemm_q4_K_8x8_q8_K)", gemm_dots, "dots");
  report("gemv dots (ggml_gemv_q4_K_8x8_q8_K)", gemv_dots, "dots");
}

}  // namespace

TEST_SUITE("parity") {
TEST_CASE("repacked Q4_K kernels parity with llama.cpp ggml (300 trials)") { run_repack_parity(300); }
}

TEST_SUITE("slow") {
TEST_CASE("repacked Q4_K kernels parity with llama.cpp ggml (6000 trials)") { run_repack_parity(6000); }
}
