// f32 -> Q8_K activation quantizer on AVX-512, byte-identical to quant::quantize_row_q8_K
// (llama.cpp's quantize_row_q8_K_ref, quants.md §7.1): the first element of largest magnitude
// gives max (with its sign); iscale = -127/max; q = min(127, round_half_even(iscale*x)) (equal to
// nearest_int for |iscale*x| <= 127); bsums exact; d = 1/iscale; an all-zero block is all zeros.
#include "jit/x86/quantize_emitter.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {
namespace {

using namespace Xbyak;

class QuantizeQ8KAvx512 : public QuantizeEmitter {
 public:
  explicit QuantizeQ8KAvx512(const KernelSpec& s) : QuantizeEmitter(s) { generate(); }

 private:
  void generate() {
    const int nb = int(spec_.k / quant::QK_K);
    load_row_args();
    vpbroadcastd(zmm31, ptr[rip + consts_]);       // 0x7fffffff: |x|
    vpbroadcastd(zmm30, ptr[rip + consts_ + 4]);   // 0x01 bytes
    vpbroadcastd(zmm29, ptr[rip + consts_ + 8]);   // 0x0001 words
    vpbroadcastd(zmm28, ptr[rip + consts_ + 12]);  // 127
    emit_row_loops(nb, 1024, int(sizeof(quant::BlockQ8_K)));
    emit_q8k_constants(0x01010101, 0x00010001);
  }

  void emit_block() override {
    // amax = max |x| over 16 vectors.
    emit_abs_max(zmm31, 16);
    vextractf32x8(ymm1, zmm0, 1);
    vmaxps(ymm0, ymm0, ymm1);
    emit_hmax_ymm0();  // amax in every lane
    Label zero, found, done;
    vxorps(xmm1, xmm1, xmm1);
    vucomiss(xmm0, xmm1);
    je(zero, T_NEAR);
    vbroadcastss(zmm0, xmm0);
    // First index with |x| == amax.
    for (int v = 0; v < 16; ++v) {
      vandps(zmm1, zmm31, ptr[r9 + v * 64]);
      vcmpeqps(k1, zmm1, zmm0);
      kmovw(eax, k1);
      mov(ecx, v * 16);
      test(eax, eax);
      jnz(found, T_NEAR);
    }
    emit_q8k_scale(found);
    vbroadcastss(zmm2, xmm2);
    for (int v = 0; v < 16; ++v) {
      vmulps(zmm1, zmm2, ptr[r9 + v * 64]);
      vcvtps2dq(zmm1, zmm1);  // MXCSR default: round half to even
      vpminsd(zmm1, zmm1, zmm28);
      vpmovsdb(ptr[r10 + 4 + v * 16], zmm1);
    }
    // bsums: 4-byte sums (vpdpbusd by ones), then pairwise word sums down to 16-byte groups.
    for (int c = 0; c < 4; ++c) {
      vpxord(zmm1, zmm1, zmm1);
      vpdpbusd(zmm1, zmm30, ptr[r10 + 4 + c * 64]);
      vpmovdw(ymm1, zmm1);
      vpmaddwd(ymm1, ymm1, ymm29);
      vpmovdw(xmm1, ymm1);
      vpmaddwd(xmm1, xmm1, xmm29);
      vpmovdw(ptr[r10 + 260 + c * 8], xmm1);
    }
    jmp(done, T_NEAR);
    L(zero);
    vpxord(zmm1, zmm1, zmm1);
    for (int off = 0; off + 64 <= 256; off += 64) vmovdqu8(ptr[r10 + off], zmm1);
    vmovdqu8(ptr[r10 + 256], ymm1);
    vmovdqu8(ptr[r10 + 260], ymm1);  // 292 bytes in all (overlapping stores)
    L(done);
  }
};

}  // namespace

std::unique_ptr<Emitter> make_quantize_q8k_avx512_emitter(const KernelSpec& spec) {
  return std::make_unique<QuantizeQ8KAvx512>(spec);
}

}  // namespace ckjit::jit
