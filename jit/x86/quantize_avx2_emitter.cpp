// f32 -> Q8_K activation quantizer on AVX2 (ymm), byte-identical to quant::quantize_row_q8_K
// (same rules as quantize_avx512_emitter.cpp): first element of largest magnitude, iscale =
// -127/max, q = min(127, round_half_even(iscale*x)), exact bsums, d = 1/iscale, zero blocks zero.
#include "jit/x86/quantize_emitter.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {
namespace {

using namespace Xbyak;

class QuantizeQ8KAvx2 : public QuantizeEmitter {
 public:
  explicit QuantizeQ8KAvx2(const KernelSpec& s) : QuantizeEmitter(s) { generate(); }

 private:
  void generate() {
    const int nb = int(spec_.k / quant::QK_K);
    load_row_args();
    vbroadcastss(ymm15, ptr[rip + consts_]);       // 0x7fffffff
    vpbroadcastd(ymm14, ptr[rip + consts_ + 12]);  // 127
    emit_row_loops(nb, 1024, int(sizeof(quant::BlockQ8_K)));
    emit_q8k_constants(0, 0);
  }

  void emit_block() override {
    emit_abs_max(ymm15, 32);
    emit_hmax_ymm0();
    Label zero, found, done;
    vxorps(xmm1, xmm1, xmm1);
    vucomiss(xmm0, xmm1);
    je(zero, T_NEAR);
    vbroadcastss(ymm0, xmm0);
    for (int v = 0; v < 32; ++v) {
      vandps(ymm1, ymm15, ptr[r9 + v * 32]);
      vcmpeqps(ymm1, ymm1, ymm0);
      vmovmskps(eax, ymm1);
      mov(ecx, v * 8);
      test(eax, eax);
      jnz(found, T_NEAR);
    }
    emit_q8k_scale(found);
    vbroadcastss(ymm2, xmm2);
    for (int g = 0; g < 16; ++g) {
      vmulps(ymm3, ymm2, ptr[r9 + g * 64]);
      vmulps(ymm4, ymm2, ptr[r9 + g * 64 + 32]);
      vcvtps2dq(ymm3, ymm3);
      vcvtps2dq(ymm4, ymm4);
      vpminsd(ymm3, ymm3, ymm14);
      vpminsd(ymm4, ymm4, ymm14);
      // bsum of the 16 values.
      vpaddd(ymm5, ymm3, ymm4);
      vextracti128(xmm6, ymm5, 1);
      vpaddd(xmm5, xmm5, xmm6);
      vpshufd(xmm6, xmm5, 0x4e);
      vpaddd(xmm5, xmm5, xmm6);
      vpshufd(xmm6, xmm5, 0xb1);
      vpaddd(xmm5, xmm5, xmm6);
      vmovd(eax, xmm5);
      mov(word[r10 + 260 + 2 * g], ax);
      // 16 int32 -> 16 int8 in order.
      vpackssdw(ymm3, ymm3, ymm4);   // [a0-3 b0-3 | a4-7 b4-7]
      vpermq(ymm3, ymm3, 0xD8);      // [a0-3 a4-7 | b0-3 b4-7]
      vpacksswb(ymm3, ymm3, ymm3);   // bytes: lane0 a0-7 (x2), lane1 b0-7 (x2)
      vpermq(ymm3, ymm3, 0x08);      // qword 0 of each lane
      vmovdqu(ptr[r10 + 4 + 16 * g], xmm3);
    }
    jmp(done, T_NEAR);
    L(zero);
    vxorps(ymm1, ymm1, ymm1);
    for (int off = 0; off + 32 <= 288; off += 32) vmovdqu(ptr[r10 + off], ymm1);
    vmovdqu(ptr[r10 + 260], ymm1);
    L(done);
  }
};

}  // namespace

std::unique_ptr<Emitter> make_quantize_q8k_avx2_emitter(const KernelSpec& spec) {
  return std::make_unique<QuantizeQ8KAvx2>(spec);
}

}  // namespace ckjit::jit
