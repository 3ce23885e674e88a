// Q8_0 x Q8_0 matmul on AVX-512 VNNI (zmm): GEMM, GEMV and fused Gate-Up SwiGLU.
// vpdpbusd needs one unsigned operand: the activations are biased to a+128 (xor 0x80) and the
// weights stay signed (memory operand); Σ(a+128)·w − 128·Σw = Σa·w exactly, Σw precomputed per
// row and block at repack time. Per 32-element block, exact int32 I = Σ w·a, then
//   acc = fma(float(I), f16(d_w)·f16(d_a), acc);   y = acc [+ residual]   (SwiGLU as for Q4_K).
#include "jit/x86/matmul_avx512_frame.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {
namespace {

class Q80Avx512 : public MatmulAvx512Frame {
 public:
  explicit Q80Avx512(const KernelSpec& s) : MatmulAvx512Frame(s, Q80PanelLayout{16}.bytes(), quant::QK8_0, false) {
    generate();
  }

 private:
  const Q80PanelLayout L_{16};
  int act_block_bytes() const override { return int(sizeof(quant::BlockQ8_0)); }
  void emit_load_act_scale(const Zmm& z, int m) override {
    vpbroadcastw(Xbyak::Ymm(z.getIdx()), ptr[xrow(m, 0)]);
    vcvtph2ps(z, Xbyak::Ymm(z.getIdx()));
  }

  void emit_superblock(int mr, int ns) override {
    vpbroadcastd(zHi, cst_scalar(17));  // 0x80 bytes
    for (int m = 0; m < mr; ++m)
      for (int st = 0; st < ns; ++st) vpxord(T(m, st, ns), T(m, st, ns), T(m, st, ns));
    for (int j = 0; j < 8; ++j)
      for (int m = 0; m < mr; ++m) {
        vpbroadcastd(zA, ptr[xrow(m, 2 + 4 * j)]);
        vpxord(zA, zA, zHi);
        for (int st = 0; st < ns; ++st) vpdpbusd(T(m, st, ns), zA, ptr[stream(st, L_.qs(j))]);
      }
    for (int st = 0; st < ns; ++st) {
      vmovdqu32(W(st, ns), ptr[stream(st, L_.wsum())]);
      vpslld(W(st, ns), W(st, ns), 7);
      for (int m = 0; m < mr; ++m) vpsubd(S(m, st, ns), T(m, st, ns), W(st, ns));
    }
    emit_float_update(mr, ns, false, L_.d());
  }
};

}  // namespace

std::unique_ptr<Emitter> make_q80_avx512_emitter(const KernelSpec& spec) { return std::make_unique<Q80Avx512>(spec); }

}  // namespace ckjit::jit
