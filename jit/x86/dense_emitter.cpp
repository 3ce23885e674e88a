// Float-weight matmul micro-tile (op=dense): mr activation rows x nr weight panels over kc elements
// of K, on AVX2 + FMA + F16C (ymm, panels of 8 columns) or AVX-512F (zmm, panels of 16). Packed
// layout (vision/dense_linear.h): panel p holds K steps of P = panel_cols(isa) consecutive weight
// values (f16, bf16 or f32), so one step is one load of P values; panels are k * P elements apart.
//
// Float order (the scalar twin, jit/reference_dense.cpp, follows it): every output (row, column)
// is one FMA chain over k in increasing order, acc = fma(x[k], w[k], acc), starting from 0 (acc=0)
// or from y (acc=1: a later kc block continues the same chain), then + bias, then + residual. The
// lanes of a register are different columns, so the chain is the same whatever the vector width or
// the tiling: a wider path can reproduce it bit for bit.
#include <type_traits>

#include "jit/x86/emitter.h"
#include "jit/kernel_args.h"

namespace ckjit::jit {
namespace {

using namespace Xbyak;

// Vec: Ymm (avx2) or Zmm (avx512); the code is the same instructions at either width.
template <class Vec>
class DenseEmitter : public Emitter {
 public:
  explicit DenseEmitter(const KernelSpec& s) : Emitter(s) { generate(); }

 private:
  static constexpr int kLanes = std::is_same_v<Vec, Zmm> ? 16 : 8;
  static constexpr int kVecBytes = kLanes * 4;
  int esize() const { return spec_.wtype == TensorType::F32 ? 4 : 2; }
  Vec acc(int i, int j) const { return Vec(i * spec_.nr + j); }
  Vec wreg(int j) const { return Vec(spec_.mr * spec_.nr + j); }
  Vec bcast() const { return Vec(spec_.mr * spec_.nr + spec_.nr); }

  // vxorps on zmm needs AVX512DQ; vpxord is AVX512F.
  void zero(const Vec& v) {
    if constexpr (std::is_same_v<Vec, Zmm>) vpxord(v, v, v);
    else vxorps(v, v, v);
  }

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
    const int64_t step_bytes = kLanes * esize();
    const int64_t pstride = spec_.k * step_bytes;
    // Activation rows: row i at [base[i / 3] + LDX * (i % 3)]; the bases advance with K.
    const Reg64 W = rax, LDX = rdx, CNT = r10, Y = rcx, LDY = r8;
    const Reg64 base[4] = {rsi, r11, r12, r13};
    const int n_bases = (mr + 2) / 3;
    push(rbx), push(r12), push(r13), push(r14), push(r15);

    mov(W, ptr[rdi + offsetof(GemmArgs, w)]);
    mov(base[0], ptr[rdi + offsetof(GemmArgs, x)]);
    mov(LDX, ptr[rdi + offsetof(GemmArgs, ldx)]);
    lea(r9, ptr[LDX + LDX * 2]);  // 3 rows
    for (int b = 1; b < n_bases; ++b) lea(base[b], ptr[base[b - 1] + r9]);
    mov(Y, ptr[rdi + offsetof(GemmArgs, y)]);
    mov(LDY, ptr[rdi + offsetof(GemmArgs, ldy)]);

    if (spec_.accumulate) {
      mov(rbx, Y);
      for (int i = 0; i < mr; ++i) {
        for (int j = 0; j < nr; ++j) vmovups(acc(i, j), ptr[rbx + j * kVecBytes]);
        if (i + 1 < mr) add(rbx, LDY);
      }
    } else {
      for (int i = 0; i < mr; ++i)
        for (int j = 0; j < nr; ++j) zero(acc(i, j));
    }

    auto row_addr = [&](int i, int64_t disp) {
      const Reg64& b = base[i / 3];
      if (i % 3 == 0) return ptr[b + disp];
      if (i % 3 == 1) return ptr[b + LDX + disp];
      return ptr[b + LDX * 2 + disp];
    };
    auto step = [&](int u) {
      for (int j = 0; j < nr; ++j) load_weights(j, ptr[W + j * pstride + u * step_bytes]);
      for (int i = 0; i < mr; ++i) {
        vbroadcastss(bcast(), row_addr(i, u * 4));
        for (int j = 0; j < nr; ++j) vfmadd231ps(acc(i, j), wreg(j), bcast());
      }
    };
    const int U = 4;
    const int64_t iters = spec_.kc / U, rem = spec_.kc % U;
    if (iters > 0) {
      mov(CNT, iters);
      Label loop;
      L(loop);
      for (int u = 0; u < U; ++u) step(u);
      add(W, U * step_bytes);
      for (int b = 0; b < n_bases; ++b) add(base[b], U * 4);
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
        if (bias) vaddps(acc(i, j), acc(i, j), ptr[r10 + j * kVecBytes]);
        if (resid) vaddps(acc(i, j), acc(i, j), ptr[r11 + j * kVecBytes]);
        vmovups(ptr[Y + j * kVecBytes], acc(i, j));
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

std::unique_ptr<Emitter> make_dense_emitter(const KernelSpec& spec) {
  if (spec.isa == IsaPath::Avx512) return std::make_unique<DenseEmitter<Zmm>>(spec);
  return std::make_unique<DenseEmitter<Ymm>>(spec);
}

}  // namespace ckjit::jit
