// Q6_K x Q8_K matmul on AVX-512 VNNI (zmm): GEMM, GEMV and fused Gate-Up SwiGLU.
// The unsigned 6-bit quants u (0..63) go to vpdpbusd as they are; q = u − 32 is restored with
// the Q8_K bsums. Per super-block, exact int32 (|S| < 2^29):
//   S = Σ_t sc_t·Σ_{e∈t} u_e·r_e  −  32·Σ_t sc_t·bsums_t        (t = 16 sub-blocks of 16)
//   acc = fma(float(S), f16(d)·D, acc);   y = acc [+ residual]   (SwiGLU as for Q4_K)
// Sub-block scales are applied in the integer domain (vpmulld per 16 elements).
#include "jit/x86/matmul_avx512_frame.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {
namespace {

class Q6KAvx512 : public MatmulAvx512Frame {
 public:
  explicit Q6KAvx512(const KernelSpec& s) : MatmulAvx512Frame(s, Q6KPanelLayout{16}.bytes(), quant::QK_K, false) {
    generate();
  }

 private:
  const Q6KPanelLayout L_{16};

  void emit_superblock(int mr, int ns) override {
    for (int t = 0; t < 16; ++t) {
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) vpxord(T(m, st, ns), T(m, st, ns), T(m, st, ns));
      for (int jj = 0; jj < 4; ++jj) {
        const int j = 4 * t + jj;
        for (int st = 0; st < ns; ++st) vmovdqu8(W(st, ns), ptr[stream(st, L_.u(j))]);
        for (int m = 0; m < mr; ++m)
          for (int st = 0; st < ns; ++st) vpdpbusd(T(m, st, ns), W(st, ns), ptr_b[xrow(m, kQ8KQs + 4 * j)]);
      }
      // Scale of sub-block t per lane: the low (t even) or high (t odd) word of the pair, signed.
      for (int st = 0; st < ns; ++st) {
        vpmovsxbw(W(st, ns), ptr[stream(st, L_.scp(t / 2))]);
        if (t % 2 == 0) vpslld(W(st, ns), W(st, ns), 16);
        vpsrad(W(st, ns), W(st, ns), 16);
      }
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) {
          if (t == 0) {
            vpmulld(S(m, st, ns), T(m, st, ns), W(st, ns));
          } else {
            vpmulld(T(m, st, ns), T(m, st, ns), W(st, ns));
            vpaddd(S(m, st, ns), S(m, st, ns), T(m, st, ns));
          }
        }
    }
    // S -= 32 * Σ_t sc_t·bsums_t, the bsums pairs against the scale pairs.
    for (int m = 0; m < mr; ++m)
      for (int st = 0; st < ns; ++st) vpxord(T(m, st, ns), T(m, st, ns), T(m, st, ns));
    for (int i = 0; i < 8; ++i) {
      for (int st = 0; st < ns; ++st) vpmovsxbw(W(st, ns), ptr[stream(st, L_.scp(i))]);
      for (int m = 0; m < mr; ++m)
        for (int st = 0; st < ns; ++st) vpdpwssd(T(m, st, ns), W(st, ns), ptr_b[xrow(m, kQ8KBsums + 4 * i)]);
    }
    for (int m = 0; m < mr; ++m)
      for (int st = 0; st < ns; ++st) {
        vpslld(T(m, st, ns), T(m, st, ns), 5);
        vpsubd(S(m, st, ns), S(m, st, ns), T(m, st, ns));
      }
    emit_float_update(mr, ns, false, L_.d());
  }
};

}  // namespace

std::unique_ptr<Emitter> make_q6k_avx512_emitter(const KernelSpec& spec) { return std::make_unique<Q6KAvx512>(spec); }

}  // namespace ckjit::jit
