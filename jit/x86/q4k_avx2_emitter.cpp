// Q4_K and Q5_K x Q8_K matmul on AVX2 (ymm, 8-row panels): GEMM, GEMV and fused Gate-Up SwiGLU for CPUs
// without AVX-512 (or with CKJIT_MAX_ISA=avx2). No VNNI: per 4 quants vpmaddubsw forms int16
// pair sums (|.| <= 2·15·127) that are added in int16 over a whole 32-element sub-block
// (|.| <= 30480, exact), then one vpmaddwd by the (sc, sc) word pair applies the sub-block scale
// in the integer domain and yields int32. Integer sums and float order are the same as the
// AVX-512 kernel (q4k_avx512_emitter.cpp), so both paths give bit-identical results:
//   acc = fma(float(S), f16(d)·D, acc); accm = fma(float(M), f16(dmin)·D, accm); y = acc − accm.
// AVX-VNNI (isa=avxvnni) runs the AVX-512 kernel's scheme on ymm instead: vpdpbusd sums each
// 32-element sub-block in int32 (low nibbles as q, high ones in place as 16·q), vpmulld applies
// the scale (16·sc for low nibbles) and adds into S on the stack, S >> 4 at the end; the min term
// is vpdpwssd-accumulated.
// Same exact S and M, hence the same bits.
#include "jit/x86/matmul_avx2_frame.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {
namespace {

using namespace Xbyak;

// Q4_K (nibbles) and Q5_K (5-bit quants one per byte; pair sums <= 2·31·127, so the int16 sum
// covers 4 quads and the scale is applied twice per sub-block) share the structure.
template <class Layout, bool kNibbles>
class KMinAvx2 : public MatmulAvx2Frame {
 public:
  explicit KMinAvx2(const KernelSpec& s) : MatmulAvx2Frame(s, Layout{8}.bytes(), quant::QK_K, true) { generate(); }

 private:
  const Layout L_{8};

  void emit_superblock(int mr, int ns) override {
    if (vnni_) emit_dots_vnni(mr, ns);  // leaves S in U
    else emit_dots_madd(mr, ns);
    emit_float_update(mr, ns, false, L_.d());
    emit_min_term(mr, ns);
    emit_float_update(mr, ns, true, L_.dmin());
  }

  void emit_dots_vnni(int mr, int ns) {
    for (int s = 0; s < 8; ++s) {
      vnni_clear_sums(mr, ns);
      for (int j = 0; j < 8; ++j) {
        for (int st = 0; st < ns; ++st) {
          if (!kNibbles) vmovdqu(W(st, ns), ptr[stream(st, L_.quad(s, j))]);
          else if (s % 2 == 0) vpand(W(st, ns), yMask, ptr[stream(st, L_.quad(s, j))]);
          else vpandn(W(st, ns), yMask, ptr[stream(st, L_.quad(s, j))]);  // bytes & 0xF0 = 16·q
        }
        vnni_dot_quad(mr, ns, kQ8KQs + 32 * s + 4 * j);
      }
      for (int st = 0; st < ns; ++st) {
        vpmovzxbd(W(st, ns), ptr[stream(st, L_.sc(s))]);
        if (kNibbles && s % 2 == 0) vpslld(W(st, ns), W(st, ns), 4);
      }
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) vnni_scale_add(m, st, ns, s == 0, s == 7);
    }
    if (kNibbles)
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) vpsrad(U(m, st, ns), U(m, st, ns), 4);
  }

  void emit_dots_madd(int mr, int ns) {
    const int quads_per_sum = kNibbles ? 8 : 4;
    bool first = true;
    for (int s = 0; s < 8; ++s)
      for (int j0 = 0; j0 < 8; j0 += quads_per_sum) {
        for (int j = j0; j < j0 + quads_per_sum; ++j) {
          for (int st = 0; st < ns; ++st) {
            if (!kNibbles) {
              vmovdqu(W(st, ns), ptr[stream(st, L_.quad(s, j))]);
            } else if (s % 2 == 0) {
              vpand(W(st, ns), yMask, ptr[stream(st, L_.quad(s, j))]);
            } else {
              vmovdqu(W(st, ns), ptr[stream(st, L_.quad(s, j))]);
              vpsrlw(W(st, ns), W(st, ns), 4);
              vpand(W(st, ns), W(st, ns), yMask);
            }
          }
          for (int m = 0; m < mr; ++m) {
            vpbroadcastd(yA, ptr[xrow(m, kQ8KQs + 32 * s + 4 * j)]);
            for (int st = 0; st < ns; ++st) madd_bytes(m, st, ns, j == j0);
          }
        }
        for (int st = 0; st < ns; ++st) load_pairs(W(st, ns), ptr[stream(st, L_.sc(s))]);
        for (int m = 0; m < mr; ++m)
          for (int st = 0; st < ns; ++st) madd_scale(m, st, ns, first);
        first = false;
      }
  }

  // Min term into U: M = Σ_p (mn_2p·B_2p + mn_2p+1·B_2p+1), B_s = bsums[2s] + bsums[2s+1]
  // (|B_s| <= 4096, int16): per row the (B_2p, B_2p+1) word pairs go to a stack scratch
  // (vpmaddwd by ones, vpackssdw: pair p in dword 0, 1, 4, 5), per stream the (mn_2p, mn_2p+1)
  // pairs are built once; 4 word dots per accumulator instead of one per sub-block.
  void emit_min_term(int mr, int ns) {
    vmovdqu(yA, ptr[rip + ones16_]);
    for (int m = 0; m < mr; ++m) {
      vpmaddwd(yT, yA, ptr[xrow(m, kQ8KBsums)]);
      vpackssdw(yT, yT, yT);
      vmovdqu(ptr[rsp + off_scratch(m)], yT);
    }
    static constexpr int kPairDword[4] = {0, 1, 4, 5};
    for (int p = 0; p < 4; ++p) {
      for (int st = 0; st < ns; ++st) {
        vpmovzxbd(W(st, ns), ptr[stream(st, L_.mn(2 * p))]);
        vpmovzxbd(yT, ptr[stream(st, L_.mn(2 * p + 1))]);
        vpslld(yT, yT, 16);
        vpor(W(st, ns), W(st, ns), yT);
      }
      for (int m = 0; m < mr; ++m) {
        vpbroadcastd(yA, ptr[rsp + off_scratch(m) + 4 * kPairDword[p]]);
        for (int st = 0; st < ns; ++st) word_dot(m, st, ns, p == 0);
      }
    }
  }

};

}  // namespace

std::unique_ptr<Emitter> make_q4k_avx2_emitter(const KernelSpec& spec) {
  return std::make_unique<KMinAvx2<Q4KPanelLayout, true>>(spec);
}
std::unique_ptr<Emitter> make_q5k_avx2_emitter(const KernelSpec& spec) {
  return std::make_unique<KMinAvx2<Q5KPanelLayout, false>>(spec);
}

}  // namespace ckjit::jit
