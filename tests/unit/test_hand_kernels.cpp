// The hand-written kernels' copies (jit/hand_kernels.h): which copy each op takes for an Isa (caps
// included), and that the portable twins give the x86 copies' bytes — the f16 row conversions,
// the GELU table rows, the RoPE rotation, the KV cache written through them, and the repack of
// vision's DenseLinear weights.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "graph/kv_cache.h"
#include "graph/rope.h"
#include "jit/hand_kernels.h"
#include "jit/isa_select.h"
#include "runtime/quants/f16_rows.h"
#include "runtime/quants/quants.h"
#include "skip.h"
#include "topology/workers.h"
#include "vision/dense_linear.h"
#include "vision/dense_linear_kernels.h"
#include "vision/vision_ops.h"

using namespace ckjit;
using jit::HandIsa;
using jit::HandOp;

namespace {

bool x86_copies_run() {
  const topo::Isa isa = jit::runtime_isa();
  return isa.avx2 && isa.fma && isa.f16c;
}

// Floats that reach every branch of the conversions: zeros, subnormal floats and halves, the
// rounding ties, the overflow edge, infinities, NaNs with payloads, and bit patterns spread over
// all 2^32.
std::vector<float> edge_floats() {
  std::vector<float> out;
  auto bits = [&](uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    out.push_back(f);
  };
  for (uint32_t u : {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x33000000u, 0x33000001u, 0x387fe000u,
                     0x387ff000u, 0x38800000u, 0x477fe000u, 0x477fefffu, 0x477ff000u, 0x7f7fffffu, 0x7f800000u,
                     0xff800000u, 0x7fc00000u, 0xffc00000u, 0x7f800001u, 0x7fa5a5a5u, 0xffdeadbeu, 0x7fffffffu})
    bits(u);
  for (uint64_t u = 0; u < (uint64_t(1) << 32); u += 4099) bits(uint32_t(u));
  for (uint32_t h = 0; h < 65536; ++h) {  // every half and the midpoints just above it
    const float f = quant::f16_to_f32(uint16_t(h));
    uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    bits(u);
    bits(u + 0x1000);
  }
  return out;
}

bool same_bytes(const void* a, const void* b, size_t n) { return n == 0 || std::memcmp(a, b, n) == 0; }

}  // namespace

TEST_SUITE("jit") {

TEST_CASE("hand kernels: each op takes the first copy the Isa runs - the portable twin below them") {
  topo::Isa avx2;
  avx2.avx = avx2.avx2 = avx2.fma = avx2.f16c = true;
  for (HandOp op : {HandOp::f16_rows, HandOp::attention_rows, HandOp::swiglu, HandOp::q8k_quantize, HandOp::decode_dots,
                    HandOp::rope_rows, HandOp::dense_panels}) {
    CAPTURE(int(op));
    CHECK(jit::hand_isa(op, topo::Isa{}) == HandIsa::portable);
    CHECK(jit::hand_isa(op, avx2) == HandIsa::avx2);
  }
  topo::Isa wide = avx2;
  wide.avx512f = wide.avx512bw = wide.avx512dq = wide.avx512vl = wide.avx512vnni = true;
  CHECK(jit::hand_isa(HandOp::f16_rows, wide) == HandIsa::avx2);  // no AVX-512 copy
  CHECK(jit::hand_isa(HandOp::rope_rows, wide) == HandIsa::avx2);
  CHECK(jit::hand_isa(HandOp::dense_panels, wide) == HandIsa::avx2);
  topo::Isa bare_avx2;  // the repack only moves bytes: AVX2 alone runs it
  bare_avx2.avx = bare_avx2.avx2 = true;
  CHECK(jit::hand_isa(HandOp::dense_panels, bare_avx2) == HandIsa::avx2);
  CHECK(jit::hand_isa(HandOp::f16_rows, bare_avx2) == HandIsa::portable);
  for (HandOp op : {HandOp::attention_rows, HandOp::swiglu, HandOp::q8k_quantize, HandOp::decode_dots})
    CHECK(jit::hand_isa(op, wide) == HandIsa::avx512);
  wide.avx512vnni = false;  // decode's two-row dots ask for the avx512 kernel path (with VNNI)
  CHECK(jit::hand_isa(HandOp::decode_dots, wide) == HandIsa::avx2);
  CHECK(jit::hand_isa(HandOp::attention_rows, wide) == HandIsa::avx512);
  // CKJIT_MAX_ISA=avx2 (and a caller's cap) reach every op through the Isa.
  const topo::Isa capped = topo::cap_isa(jit::runtime_isa(), "avx2");
  for (HandOp op : {HandOp::attention_rows, HandOp::swiglu, HandOp::q8k_quantize, HandOp::decode_dots})
    CHECK(jit::hand_isa(op, capped) != HandIsa::avx512);
}

TEST_CASE("hand kernels: the portable f16 row twins give the AVX2 + F16C copies' bytes") {
  if (!x86_copies_run()) {
    CKJIT_SKIP("AVX2 + FMA + F16C not usable here: no x86 copy to compare");
  }
  const std::vector<float> x = edge_floats();
  for (int64_t n : {int64_t(x.size()), int64_t(x.size()) - 3, int64_t(7)}) {  // whole groups of 8 and tails
    CAPTURE(n);
    std::vector<uint16_t> h0(static_cast<size_t>(n)), h1(static_cast<size_t>(n));
    quant::f32_to_f16_rows_avx2(x.data(), h0.data(), n);
    quant::f32_to_f16_rows(x.data(), h1.data(), n);
    CHECK(same_bytes(h0.data(), h1.data(), h0.size() * 2));
    std::vector<float> r0(static_cast<size_t>(n)), r1(static_cast<size_t>(n));
    quant::round_f16_rows_avx2(x.data(), r0.data(), n);
    quant::round_f16_rows(x.data(), r1.data(), n);
    CHECK(same_bytes(r0.data(), r1.data(), r0.size() * 4));
  }
}

TEST_CASE("hand kernels: the portable GELU rows give the AVX2 copy's bytes") {
  if (!x86_copies_run()) {
    CKJIT_SKIP("AVX2 + FMA + F16C not usable here: no x86 copy to compare");
  }
  const vision::GeluTable x86(jit::runtime_isa()), portable{topo::Isa{}};
  std::vector<float> x = edge_floats();
  for (float v : {-10.0f, 10.0f, -10.000001f, 9.999999f, -9.999999f, 10.000001f}) x.push_back(v);
  x.resize(x.size() / 8 * 8 + 5);  // a tail
  std::vector<float> a = x, b = x;
  Workers pool(2);
  x86.apply(pool, a.data(), int64_t(a.size()), 1, int64_t(a.size()));
  portable.apply(pool, b.data(), int64_t(b.size()), 1, int64_t(b.size()));
  CHECK(same_bytes(a.data(), b.data(), a.size() * 4));
}

TEST_CASE("hand kernels: the portable RoPE rotation gives the AVX2 + FMA copy's bytes") {
  if (!x86_copies_run()) {
    CKJIT_SKIP("AVX2 + FMA + F16C not usable here: no x86 copy to compare");
  }
  const int32_t sec[4] = {24, 20, 20, 0};
  const graph::Rope x86(128, 5e6f, sec, jit::runtime_isa()), portable(128, 5e6f, sec, topo::Isa{});
  std::mt19937 rng(4);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  std::vector<float> c(64), s(64), a(size_t(8 * 128));
  for (int64_t pos : {0, 1, 77, 4000, 262143}) {
    x86.angles(graph::Position::text(pos), c.data(), s.data());
    for (auto& f : a) f = nd(rng);
    std::vector<float> b = a;
    x86.apply(a.data(), 8, c.data(), s.data());
    portable.apply(b.data(), 8, c.data(), s.data());
    CAPTURE(pos);
    CHECK(same_bytes(a.data(), b.data(), a.size() * 4));
  }
}

TEST_CASE("hand kernels: a KV cache written through the portable twins holds the same halves") {
  if (!x86_copies_run()) {
    CKJIT_SKIP("AVX2 + FMA + F16C not usable here: no x86 copy to compare");
  }
  std::mt19937 rng(9);
  std::normal_distribution<float> nd(0.0f, 30.0f);
  for (graph::KvLayout layout : {graph::KvLayout::rows, graph::KvLayout::panels})
    for (int panel : {8, 16})
      for (int64_t dh : {64, 144, 256}) {  // 144, 256: past the 128-dim chunks of the panel writes
        CAPTURE(int(layout));
        CAPTURE(panel);
        CAPTURE(dh);
        const int64_t n_ctx = 48, n_kv = 2, width = n_kv * dh;  // whole panels: no unwritten lanes
        graph::KvCache x86(2, n_ctx, n_kv, dh, layout, panel, jit::runtime_isa());
        graph::KvCache portable(2, n_ctx, n_kv, dh, layout, panel, topo::Isa{});
        std::vector<float> k(static_cast<size_t>(width)), v(static_cast<size_t>(width));
        for (int64_t l = 0; l < 2; ++l)
          for (int64_t slot = 0; slot < n_ctx; ++slot) {
            for (auto& f : k) f = nd(rng);
            for (auto& f : v) f = nd(rng);
            x86.write(l, slot, k.data(), v.data());
            portable.write(l, slot, k.data(), v.data());
          }
        for (int64_t l = 0; l < 2; ++l) x86.seal(l, n_ctx), portable.seal(l, n_ctx);
        std::vector<std::vector<uint16_t>> runs;
        x86.for_each_run(n_ctx, [&](const uint16_t* p, size_t c) { runs.emplace_back(p, p + c); });
        size_t i = 0;
        bool same = true;
        portable.for_each_run(n_ctx, [&](const uint16_t* p, size_t c) {
          same = same && i < runs.size() && runs[i].size() == c && same_bytes(runs[i].data(), p, c * 2);
          ++i;
        });
        CHECK(i == runs.size());
        CHECK(same);
        // Against f32_to_f16 of the last slot's values, read back through the panels or rows.
        const uint16_t* vr = x86.v_rows(1);
        const float v0 = v[0];
        if (layout == graph::KvLayout::rows) CHECK(vr[(n_ctx - 1) * width] == quant::f32_to_f16(v0));
        else CHECK(vr[(n_ctx - 1) * panel] == quant::f32_to_f16(v0));
      }
}

TEST_CASE("hand kernels: the portable repack of a vision DenseLinear gives the AVX2 copy's bytes (panel and K remainders)") {
  if (jit::hand_isa(HandOp::dense_panels, jit::runtime_isa()) != HandIsa::avx2) {
    CKJIT_SKIP("AVX2 not usable here: no x86 copy to compare");
  }
  std::mt19937 rng(11);
  std::uniform_int_distribution<int> byte(0, 255);
  struct Shape {
    int64_t n, k;
  };
  int compared = 0;
  for (int es : {2, 4})
    for (int P : {8, 16})
      // Whole panels, a last panel of fewer rows (n % P), fewer rows than one panel, K tails
      // (k % 8) and K shorter than one 8-element run.
      for (const Shape sh : {Shape{8, 8}, Shape{16, 16}, Shape{32, 64}, Shape{24, 40}, Shape{17, 19}, Shape{5, 3}, Shape{33, 1},
                             Shape{48, 1152}, Shape{40, 100}, Shape{1, 8}, Shape{31, 7}}) {
        CAPTURE(es);
        CAPTURE(P);
        CAPTURE(sh.n);
        CAPTURE(sh.k);
        std::vector<uint8_t> src(size_t(sh.n * sh.k * es));
        for (auto& b : src) b = uint8_t(byte(rng));
        const int64_t n_panels = (sh.n + P - 1) / P, stride = sh.k * P * es;
        // Different fills: a byte either copy leaves unwritten shows as a difference.
        std::vector<uint8_t> a(size_t(n_panels * stride), 0xAA), b(a.size(), 0x55);
        for (int64_t p = 0; p < n_panels; ++p) {
          vision::kernels::pack_panel_avx2(src.data(), es, sh.n, sh.k, P, p, a.data() + p * stride);
          vision::kernels::pack_panel_portable(src.data(), es, sh.n, sh.k, P, p, b.data() + p * stride);
        }
        CHECK(same_bytes(a.data(), b.data(), a.size()));
        // The layout itself: element kk of row r at panel r / P, column r % P; missing columns zero.
        bool layout = true;
        for (int64_t r = 0; r < n_panels * P; ++r)
          for (int64_t kk = 0; kk < sh.k; ++kk) {
            const uint8_t* at = a.data() + (r / P) * stride + (kk * P + r % P) * es;
            for (int e = 0; e < es; ++e) layout = layout && at[e] == (r < sh.n ? src[size_t((r * sh.k + kk) * es + e)] : 0);
          }
        CHECK(layout);
        ++compared;
      }
  CHECK(compared == 44);
  // A DenseLinear takes its copy from the Isa it is built with.
  const std::vector<float> w(size_t(24 * 40), 0.5f);
  const vision::DenseLinear x86(w, 24, 40, std::vector<float>(24, 0.0f), TensorType::F32, jit::runtime_isa(), 1);
  CHECK(std::string(x86.repack_impl()) == "avx2");
}

}  // TEST_SUITE
