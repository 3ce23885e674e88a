// Q8_0 x Q8_0 matmul on AVX2 (ymm, 8-row panels), same integer sums and float order as the
// AVX-512 kernel (q80_avx512_emitter.cpp). Without VNNI the signed x signed product uses
// vpmaddubsw(|w|, sign(w)·a): pair sums <= 2·128·127 fit int16 exactly (activations from the
// Q8_0 quantizers lie in [-127, 127]), then vpmaddwd by ones gives int32. On AVX-VNNI
// (isa=avxvnni) the AVX-512 kernel's bias trick: vpdpbusd(a xor 0x80 = a+128, w) accumulates onto
// −128·Σw (the panel's precomputed row sums), which leaves exactly Σ a·w for any int8 a; the
// sum builds up in U, the VNNI path's one accumulator per (row, stream).
#include "jit/x86/matmul_avx2_frame.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {
namespace {

class Q80Avx2 : public MatmulAvx2Frame {
 public:
  explicit Q80Avx2(const KernelSpec& s) : MatmulAvx2Frame(s, Q80PanelLayout{8}.bytes(), quant::QK8_0, false) {
    generate();
  }

 private:
  const Q80PanelLayout L_{8};
  int act_block_bytes() const override { return int(sizeof(quant::BlockQ8_0)); }
  void emit_load_act_scale(const Ymm& y, int m) override {
    vpbroadcastw(Xmm(y.getIdx()), ptr[xrow(m, 0)]);
    vcvtph2ps(y, Xmm(y.getIdx()));
  }

  void emit_superblock(int mr, int ns) override {
    if (vnni_) emit_dots_vnni(mr, ns);
    else emit_dots_madd(mr, ns);
    emit_float_update(mr, ns, false, L_.d());
  }

  void emit_dots_vnni(int mr, int ns) {
    vpbroadcastd(yMask, cst(17));  // 0x80 bytes (this kernel has no nibble mask to keep)
    vpxor(yT, yT, yT);
    for (int st = 0; st < ns; ++st) {
      vmovdqu(W(st, ns), ptr[stream(st, L_.wsum())]);
      vpslld(W(st, ns), W(st, ns), 7);
      for (int m = 0; m < mr; ++m) vpsubd(U(m, st, ns), yT, W(st, ns));
    }
    for (int j = 0; j < 8; ++j) {
      for (int st = 0; st < ns; ++st) vmovdqu(W(st, ns), ptr[stream(st, L_.qs(j))]);
      for (int m = 0; m < mr; ++m) {
        vpbroadcastd(yA, ptr[xrow(m, 2 + 4 * j)]);
        vpxor(yA, yA, yMask);
        for (int st = 0; st < ns; ++st) dot_bytes(U(m, st, ns), yA, W(st, ns));
      }
    }
  }

  void emit_dots_madd(int mr, int ns) {
    for (int j = 0; j < 8; ++j) {
      for (int st = 0; st < ns; ++st) vmovdqu(W(st, ns), ptr[stream(st, L_.qs(j))]);
      for (int m = 0; m < mr; ++m) {
        vpbroadcastd(yA, ptr[xrow(m, 2 + 4 * j)]);
        for (int st = 0; st < ns; ++st) {
          vpsignb(yT, yA, W(st, ns));
          vpabsb(yMask, W(st, ns));
          vpmaddubsw(yT, yMask, yT);
          vpmaddwd(yT, yT, ptr[rip + ones16_]);
          if (j == 0) vmovdqa(S(m, st, ns), yT);
          else vpaddd(S(m, st, ns), S(m, st, ns), yT);
        }
      }
    }
  }
};

}  // namespace

std::unique_ptr<Emitter> make_q80_avx2_emitter(const KernelSpec& spec) { return std::make_unique<Q80Avx2>(spec); }

}  // namespace ckjit::jit
