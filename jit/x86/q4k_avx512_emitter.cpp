// Q4_K x Q8_K and Q5_K x Q8_K matmul on AVX-512 VNNI (zmm): GEMM, GEMV and fused Gate-Up SwiGLU.
// (Q5_K: same sums and float order with 5-bit quants 0..31 stored one per byte.)
//
// Each zmm lane is one weight row (output column); vpdpbusd multiplies the row's 4 unsigned
// quants by 4 signed activation quants broadcast to all lanes. Per 32-element sub-block the
// integer sum T is scaled in the integer domain (vpmulld by the 6-bit scale, low-nibble
// sub-blocks by 16*sc since their nibble is used in place as 16*q: see below) and added into S;
// once per super-block S is converted to float. Float order per super-block (== llama.cpp's
// repacked gemv, quants.md §8.6):
//   S = Σ_s sc_s·dot32(q_s, r_s)   M = Σ_s mn_s·(bsums[2s] + bsums[2s+1])   (exact int32)
//   acc  = fma(float(S), f16(d)·D,    acc)
//   accm = fma(float(M), f16(dmin)·D, accm)
// y = acc − accm  [+ residual]   or, for SwiGLU, y = silu(g)·u with g, u computed as y.
// High nibbles are masked with 0xF0 (value 16·q, still < 256) and low ones with 0x0F, so no shift
// is needed; the sum is then 16·S, divided back exactly by an arithmetic shift.
#include "jit/x86/matmul_avx512_frame.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {
namespace {

using namespace Xbyak;

// Q4_K (nibbles, Q4KPanelLayout) and Q5_K (one byte per quant, Q5KPanelLayout) share the
// structure; Q5_K loads its 5-bit quants as bytes and its scales need no factor 16.
template <class Layout, bool kNibbles>
class KMinAvx512 : public MatmulAvx512Frame {
 public:
  explicit KMinAvx512(const KernelSpec& s) : MatmulAvx512Frame(s, Layout{16}.bytes(), quant::QK_K, true) {
    generate();
  }

 private:
  const Layout L_{16};

  void emit_superblock(int mr, int ns) override {
    for (int s = 0; s < 8; ++s) {
      const Zmm& mask = s % 2 == 0 ? zLo : zHi;
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) vpxord(T(m, st, ns), T(m, st, ns), T(m, st, ns));
      for (int j = 0; j < 8; ++j) {
        for (int st = 0; st < ns; ++st) {
          if (kNibbles) vpandd(W(st, ns), mask, ptr[stream(st, L_.quad(s, j))]);
          else vmovdqu8(W(st, ns), ptr[stream(st, L_.quad(s, j))]);
        }
        int aoff = kQ8KQs + 32 * s + 4 * j;
        for (int m = 0; m < mr; ++m)
          for (int st = 0; st < ns; ++st) vpdpbusd(T(m, st, ns), W(st, ns), ptr_b[xrow(m, aoff)]);
      }
      for (int st = 0; st < ns; ++st) {
        vpmovzxbd(W(st, ns), ptr[stream(st, L_.sc(s))]);
        if (kNibbles && s % 2 == 0) vpslld(W(st, ns), W(st, ns), 4);
      }
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) {
          if (s == 0) {
            vpmulld(S(m, st, ns), T(m, st, ns), W(st, ns));
          } else {
            vpmulld(T(m, st, ns), T(m, st, ns), W(st, ns));
            vpaddd(S(m, st, ns), S(m, st, ns), T(m, st, ns));
          }
        }
    }
    if (kNibbles)
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) vpsrad(S(m, st, ns), S(m, st, ns), 4);
    // Min term M = Σ_p (mn_2p·B_2p + mn_2p+1·B_2p+1), B_s = bsums[2s] + bsums[2s+1]: per row the
    // (B_2p, B_2p+1) word pairs go to a stack scratch (vpmaddwd by ones, then vpackssdw), per
    // stream the (mn_2p, mn_2p+1) pairs are built once; 4 vpdpwssd per accumulator.
    vpbroadcastd(Xbyak::Ymm(zF.getIdx()), cst_scalar(2));  // 0x0001 words
    for (int m = 0; m < mr; ++m) {
      const Xbyak::Ymm t(zD.getIdx());
      vpmaddwd(t, Xbyak::Ymm(zF.getIdx()), ptr[xrow(m, kQ8KBsums)]);
      vpackssdw(t, t, t);  // dwords 0, 1, 4, 5 = pairs p = 0..3
      vmovdqu32(ptr[rsp + off_scratch() + 32 * m], t);
    }
    for (int m = 0; m < mr; ++m)
      for (int st = 0; st < ns; ++st) vpxord(T(m, st, ns), T(m, st, ns), T(m, st, ns));
    static constexpr int kPairDword[4] = {0, 1, 4, 5};
    for (int p = 0; p < 4; ++p) {
      for (int st = 0; st < ns; ++st) {
        vpmovzxbd(W(st, ns), ptr[stream(st, L_.mn(2 * p))]);
        vpmovzxbd(zF, ptr[stream(st, L_.mn(2 * p + 1))]);
        vpslld(zF, zF, 16);
        vpord(W(st, ns), W(st, ns), zF);
      }
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st)
          vpdpwssd(T(m, st, ns), W(st, ns), ptr_b[rsp + off_scratch() + 32 * m + 4 * kPairDword[p]]);
    }
    emit_float_update(mr, ns, false, L_.d());
    emit_float_update(mr, ns, true, L_.dmin());
  }
};

}  // namespace

std::unique_ptr<Emitter> make_q4k_avx512_emitter(const KernelSpec& spec) {
  return std::make_unique<KMinAvx512<Q4KPanelLayout, true>>(spec);
}
std::unique_ptr<Emitter> make_q5k_avx512_emitter(const KernelSpec& spec) {
  return std::make_unique<KMinAvx512<Q5KPanelLayout, false>>(spec);
}

}  // namespace ckjit::jit
