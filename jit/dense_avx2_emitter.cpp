// Float-weight matmul micro-tile on AVX2 + FMA + F16C (op=dense): mr activation rows x nr weight
// panels of 8 columns over kc elements of K. Packed layout (jit/packed_weights.h DensePanels): panel
// p holds K steps of 8 consecutive weight values (f16, bf16 or f32), so one step is one 16- or
// 32-byte load; panels are k * 8 elements apart.
//
// Float order (the scalar twin, jit/reference_dense.cpp, follows it): every output (row, column)
// is one FMA chain over k in increasing order, acc = fma(x[k], w[k], acc), starting from 0 (acc=0)
// or from y (acc=1: a later kc block continues the same chain), then + bias, then + residual. The
// lanes of a register are different columns, so the chain is the same whatever the vector width or
// the tiling: a wider path can reproduce it bit for bit.
#include "jit/emitter.h"
#include "jit/kernel_args.h"

namespace ckjit::jit {
namespace {

using namespace Xbyak;

class DenseAvx2 : public Emitter {
 public:
  explicit DenseAvx2(const KernelSpec& s) : Emitter(s) { generate(); }

 private:
  int esize() const { return spec_.wtype == TensorType::F32 ? 4 : 2; }
  Ymm acc(int i, int j) const { return Ymm(i * spec_.nr + j); }
  Ymm wreg(int j) const { return Ymm(spec_.mr * spec_.nr + j); }
  Ymm bcast() const { return Ymm(spec_.mr * spec_.nr + spec_.nr); }

  void load_weights(int j, const Address& a) {
    switch (spec_.wtype) {
      case TensorType::F16: vcvtph2ps(wreg(j), a); break;
      case TensorType::BF16:
        vpmovzxwd(wreg(j), a);
        vpslld(wreg(j), wreg(j), 16);
        break;
      default: vmovups(wreg(j), a); break;
    }
  }

  void generate() {
    const int mr = spec_.mr, nr = spec_.nr;
    const int64_t step_bytes = 8 * esize();
    const int64_t pstride = spec_.k * step_bytes;
    const Reg64 W = rax, KOFF = r9, CNT = r10, Y = rcx, LDY = r8;
    const Reg64 xr[6] = {rsi, r11, r12, r13, r14, r15};
    push(rbx), push(r12), push(r13), push(r14), push(r15);

    mov(W, ptr[rdi + offsetof(GemmArgs, w)]);
    mov(xr[0], ptr[rdi + offsetof(GemmArgs, x)]);
    mov(rdx, ptr[rdi + offsetof(GemmArgs, ldx)]);
    for (int i = 1; i < mr; ++i) lea(xr[i], ptr[xr[i - 1] + rdx]);
    mov(Y, ptr[rdi + offsetof(GemmArgs, y)]);
    mov(LDY, ptr[rdi + offsetof(GemmArgs, ldy)]);

    if (spec_.accumulate) {
      mov(rbx, Y);
      for (int i = 0; i < mr; ++i) {
        for (int j = 0; j < nr; ++j) vmovups(acc(i, j), ptr[rbx + j * 32]);
        if (i + 1 < mr) add(rbx, LDY);
      }
    } else {
      for (int i = 0; i < mr; ++i)
        for (int j = 0; j < nr; ++j) vxorps(acc(i, j), acc(i, j), acc(i, j));
    }

    auto step = [&](int u) {
      for (int j = 0; j < nr; ++j) load_weights(j, ptr[W + j * pstride + u * step_bytes]);
      for (int i = 0; i < mr; ++i) {
        vbroadcastss(bcast(), ptr[xr[i] + KOFF + u * 4]);
        for (int j = 0; j < nr; ++j) vfmadd231ps(acc(i, j), wreg(j), bcast());
      }
    };
    const int U = 4;
    const int64_t iters = spec_.kc / U, rem = spec_.kc % U;
    xor_(KOFF, KOFF);
    if (iters > 0) {
      mov(CNT, iters);
      Label loop;
      L(loop);
      for (int u = 0; u < U; ++u) step(u);
      add(W, U * step_bytes);
      add(KOFF, U * 4);
      dec(CNT);
      jnz(loop);
    }
    for (int u = 0; u < rem; ++u) step(u);

    const bool bias = spec_.epilogue != Epilogue::Store;
    const bool resid = spec_.epilogue == Epilogue::BiasResidual;
    if (bias) mov(r10, ptr[rdi + offsetof(GemmArgs, w2)]);
    if (resid) {
      mov(r11, ptr[rdi + offsetof(GemmArgs, r)]);
      mov(rdx, ptr[rdi + offsetof(GemmArgs, ldr)]);
    }
    for (int i = 0; i < mr; ++i) {
      for (int j = 0; j < nr; ++j) {
        if (bias) vaddps(acc(i, j), acc(i, j), ptr[r10 + j * 32]);
        if (resid) vaddps(acc(i, j), acc(i, j), ptr[r11 + j * 32]);
        vmovups(ptr[Y + j * 32], acc(i, j));
      }
      if (i + 1 < mr) {
        add(Y, LDY);
        if (resid) add(r11, rdx);
      }
    }
    vzeroupper();
    pop(r15), pop(r14), pop(r13), pop(r12), pop(rbx);
    ret();
  }
};

}  // namespace

std::unique_ptr<Emitter> make_dense_avx2_emitter(const KernelSpec& spec) { return std::make_unique<DenseAvx2>(spec); }

}  // namespace ckjit::jit
