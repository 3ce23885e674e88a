// Q6_K x Q8_K matmul on AVX2 (ymm, 8-row panels), same sums and float order as the AVX-512 kernel
// (q6k_avx512_emitter.cpp). vpmaddubsw pair sums of u (0..63) x r are <= 2·63·127, so two quads
// (8 elements) are added in int16 (<= 32004, exact) before vpmaddwd applies the signed scale
// pair (sc_t, sc_t) of the 16-element sub-block t. On AVX-VNNI (isa=avxvnni) vpdpbusd sums the
// 16 elements of t in int32 and vpmulld applies the signed sc_t, as in the AVX-512 kernel (S is
// kept on the stack); the bsums term is vpdpwssd-accumulated. Same exact S either way.
#include "jit/x86/matmul_avx2_frame.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {
namespace {

class Q6KAvx2 : public MatmulAvx2Frame {
 public:
  explicit Q6KAvx2(const KernelSpec& s) : MatmulAvx2Frame(s, Q6KPanelLayout{8}.bytes(), quant::QK_K, false) {
    generate();
  }

 private:
  const Q6KPanelLayout L_{8};

  // y = (sc_t, sc_t) words per lane from the pair layout (sc_{2i}, sc_{2i+1}).
  void load_scale_pair(const Ymm& y, int st, int t) {
    vpmovsxbw(y, ptr[stream(st, L_.scp(t / 2))]);
    if (t % 2 == 0) {
      vpslld(yT, y, 16);
      vpblendw(y, y, yT, 0xAA);  // high word <- low word
    } else {
      vpsrld(yT, y, 16);
      vpblendw(y, yT, y, 0xAA);  // low word <- high word
    }
  }

  void emit_superblock(int mr, int ns) override {
    if (vnni_) emit_dots_vnni(mr, ns);
    else emit_dots_madd(mr, ns);
    emit_bsums_term(mr, ns);
    emit_float_update(mr, ns, false, L_.d());
  }

  void emit_dots_vnni(int mr, int ns) {
    for (int t = 0; t < 16; ++t) {
      vnni_clear_sums(mr, ns);
      for (int j = 4 * t; j < 4 * t + 4; ++j) {
        for (int st = 0; st < ns; ++st) vmovdqu(W(st, ns), ptr[stream(st, L_.u(j))]);
        vnni_dot_quad(mr, ns, kQ8KQs + 4 * j);
      }
      // sc_t per lane as a signed dword: the low (t even) or high (t odd) word of the pair.
      for (int st = 0; st < ns; ++st) {
        vpmovsxbw(W(st, ns), ptr[stream(st, L_.scp(t / 2))]);
        if (t % 2 == 0) vpslld(W(st, ns), W(st, ns), 16);
        vpsrad(W(st, ns), W(st, ns), 16);
      }
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) vnni_scale_add(m, st, ns, t == 0, false);
    }
  }

  void emit_dots_madd(int mr, int ns) {
    bool first = true;
    for (int t = 0; t < 16; ++t)
      for (int half = 0; half < 2; ++half) {
        for (int q = 0; q < 2; ++q) {
          const int j = 4 * t + 2 * half + q;
          for (int st = 0; st < ns; ++st) vmovdqu(W(st, ns), ptr[stream(st, L_.u(j))]);
          for (int m = 0; m < mr; ++m) {
            vpbroadcastd(yA, ptr[xrow(m, kQ8KQs + 4 * j)]);
            for (int st = 0; st < ns; ++st) madd_bytes(m, st, ns, q == 0);
          }
        }
        for (int st = 0; st < ns; ++st) load_scale_pair(W(st, ns), st, t);
        for (int m = 0; m < mr; ++m)
          for (int st = 0; st < ns; ++st) madd_scale(m, st, ns, first);
        first = false;
      }
  }

  // S -= 32 * Σ_t sc_t·bsums_t.
  void emit_bsums_term(int mr, int ns) {
    for (int i = 0; i < 8; ++i) {
      for (int st = 0; st < ns; ++st) vpmovsxbw(W(st, ns), ptr[stream(st, L_.scp(i))]);
      for (int m = 0; m < mr; ++m) {
        vpbroadcastd(yA, ptr[xrow(m, kQ8KBsums + 4 * i)]);
        for (int st = 0; st < ns; ++st) word_dot(m, st, ns, i == 0);
      }
    }
    for (int m = 0; m < mr; ++m)
      for (int st = 0; st < ns; ++st) {
        vpslld(U(m, st, ns), U(m, st, ns), 5);
        if (vnni_) {  // S from its stack slot; the result stays in U for the float update
          vmovdqu(yT, ptr[rsp + off_isum(m, st, ns)]);
          vpsubd(U(m, st, ns), yT, U(m, st, ns));
        } else {
          vpsubd(S(m, st, ns), S(m, st, ns), U(m, st, ns));
        }
      }
  }
};

}  // namespace

std::unique_ptr<Emitter> make_q6k_avx2_emitter(const KernelSpec& spec) { return std::make_unique<Q6KAvx2>(spec); }

}  // namespace ckjit::jit
