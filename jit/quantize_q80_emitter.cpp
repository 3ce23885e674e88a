// f32 -> Q8_0 activation quantizer (ymm code, used for isa=avx2 and isa=avx512), byte-identical
// to quant::quantize_row_q8_0_x86 (llama.cpp's x86 quantize_row_q8_0, quants.md §3.1):
// amax = max|x| over 32; d = f16(amax/127) (vcvtps2ph, round to nearest even);
// id = amax != 0 ? 127/amax : 0; q = round_half_even(x*id) with saturating packs.
#include <bit>

#include "jit/emitter.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {
namespace {

using namespace Xbyak;

class QuantizeQ80 : public Emitter {
 public:
  explicit QuantizeQ80(const KernelSpec& s) : Emitter(s) { generate(); }

 private:
  Label consts_, perm_;

  void generate() {
    const int nb = int(spec_.k / quant::QK8_0);
    mov(rsi, ptr[rdi + 0]);
    mov(rdx, ptr[rdi + 8]);
    mov(r8, ptr[rdi + 16]);
    vbroadcastss(ymm15, ptr[rip + consts_]);  // 0x7fffffff
    vmovdqu(ymm14, ptr[rip + perm_]);
    Label rows, rows_done;
    L(rows);
    test(r8, r8);
    jz(rows_done, T_NEAR);
    mov(r9, rsi);
    mov(r10, rdx);
    mov(r11d, nb);
    Label blocks;
    L(blocks);
    emit_block();
    add(r9, 128);
    add(r10, int(sizeof(quant::BlockQ8_0)));
    dec(r11d);
    jnz(blocks, T_NEAR);
    add(rsi, ptr[rdi + 24]);
    add(rdx, ptr[rdi + 32]);
    dec(r8);
    jmp(rows, T_NEAR);
    L(rows_done);
    vzeroupper();
    ret();
    align(32);
    L(perm_);
    for (uint32_t i : {0u, 4u, 1u, 5u, 2u, 6u, 3u, 7u}) dd(i);
    L(consts_);
    dd(0x7fffffff);
    dd(std::bit_cast<uint32_t>(127.0f));
  }

  void emit_block() {
    vandps(ymm0, ymm15, ptr[r9]);
    for (int v = 1; v < 4; ++v) {
      vandps(ymm1, ymm15, ptr[r9 + v * 32]);
      vmaxps(ymm0, ymm0, ymm1);
    }
    vextractf128(xmm1, ymm0, 1);
    vmaxps(xmm0, xmm0, xmm1);
    vshufps(xmm1, xmm0, xmm0, 0x4e);
    vmaxps(xmm0, xmm0, xmm1);
    vshufps(xmm1, xmm0, xmm0, 0xb1);
    vmaxps(xmm0, xmm0, xmm1);               // amax
    vmovss(xmm2, ptr[rip + consts_ + 4]);   // 127
    vdivss(xmm3, xmm0, xmm2);               // d = amax / 127
    vcvtps2ph(xmm3, xmm3, 0);               // round to nearest even
    vpextrw(ptr[r10], xmm3, 0);
    vdivss(xmm2, xmm2, xmm0);               // 127 / amax (inf when amax == 0)
    vxorps(xmm1, xmm1, xmm1);
    vcmpneqss(xmm1, xmm0, xmm1);            // all-ones when amax != 0
    vandps(xmm2, xmm2, xmm1);
    vbroadcastss(ymm2, xmm2);
    for (int v = 0; v < 4; ++v) {
      vmulps(Ymm(4 + v), ymm2, ptr[r9 + v * 32]);
      vcvtps2dq(Ymm(4 + v), Ymm(4 + v));
    }
    vpackssdw(ymm4, ymm4, ymm5);
    vpackssdw(ymm6, ymm6, ymm7);
    vpacksswb(ymm4, ymm4, ymm6);
    vpermd(ymm4, ymm14, ymm4);
    vmovdqu(ptr[r10 + 2], ymm4);
  }
};

}  // namespace

std::unique_ptr<Emitter> make_quantize_q80_emitter(const KernelSpec& spec) { return std::make_unique<QuantizeQ80>(spec); }

}  // namespace ckjit::jit
