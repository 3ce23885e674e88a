// f32 -> Q8_0 activation quantizer (ymm code, used for isa=avx2 and isa=avx512), byte-identical
// to quant::quantize_row_q8_0_x86 (llama.cpp's x86 quantize_row_q8_0, quants.md §3.1):
// amax = max|x| over 32; d = f16(amax/127) (vcvtps2ph, round to nearest even);
// id = amax != 0 ? 127/amax : 0; q = round_half_even(x*id) with saturating packs.
#include <bit>

#include "jit/x86/quantize_emitter.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {
namespace {

using namespace Xbyak;

class QuantizeQ80 : public QuantizeEmitter {
 public:
  explicit QuantizeQ80(const KernelSpec& s) : QuantizeEmitter(s) { generate(); }

 private:
  Label perm_;

  void generate() {
    const int nb = int(spec_.k / quant::QK8_0);
    load_row_args();
    vbroadcastss(ymm15, ptr[rip + consts_]);  // 0x7fffffff
    vmovdqu(ymm14, ptr[rip + perm_]);
    emit_row_loops(nb, 128, int(sizeof(quant::BlockQ8_0)));
    align(32);
    L(perm_);
    for (uint32_t i : {0u, 4u, 1u, 5u, 2u, 6u, 3u, 7u}) dd(i);
    L(consts_);
    dd(0x7fffffff);
    dd(std::bit_cast<uint32_t>(127.0f));
  }

  void emit_block() override {
    emit_abs_max(ymm15, 4);
    emit_hmax_ymm0();  // amax
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
