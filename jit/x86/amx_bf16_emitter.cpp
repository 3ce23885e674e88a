// op=dense on AMX-BF16: y = x (rows of K bf16, ldx bytes apart) times W (column pairs of
// jit/amx_bf16_layout.h), for every 32-row block of GemmArgs::m and every 32-column pair of
// GemmArgs::n (both multiples of 32; GemmArgs::ldr: the bytes from one pair of W to the next, its
// packed K x 64, so a caller may start inside a longer K). Tiles: C 0..3
// (2 x 2 blocks of 16 x 16 floats), A 4..5 (16 rows x 32 bf16), B 6..7 (16 pair rows x 16 columns).
// Per K step of 32: two A and two B tile loads, four tdpbf16ps. The block is stored as is; bias and
// residual are the caller's (vision/amx_bf16_linear.cpp).
// Float order: the hardware's. tdpbf16ps sums its products in an order Intel does not specify; it
// matches neither a chain of FMAs nor pairwise sums (measured on Sapphire Rapids), so this kernel's
// bits are its own, and its scalar twin (jit/reference_dense.cpp) agrees only within bf16 rounding.
#include <cstddef>

#include "jit/amx_bf16_layout.h"
#include "jit/x86/emitter.h"
#include "jit/kernel_args.h"

namespace ckjit::jit {
namespace {

class AmxBf16Dense : public Emitter {
 public:
  explicit AmxBf16Dense(const KernelSpec& s) : Emitter(s) { generate(); }

 private:
  void generate() {
    using namespace Xbyak;
    // rdi stays the GemmArgs pointer: n and ldr are read from it per row block / pair.
    const Reg64 a_rows = r8, ldx = r9, w = r10, y = r11, ldy = rcx, m = rdx;
    const Reg64 a0 = rsi, a1 = rbx, b = rax, wp = r12, b_stride = r13, steps = r14, yp = r15, cols = rbp;
    Label cfg, rows, pairs, kloop, done;
    push(rbx), push(rbp), push(r12), push(r13), push(r14), push(r15);
    mov(a_rows, ptr[rdi + offsetof(GemmArgs, x)]);
    mov(ldx, ptr[rdi + offsetof(GemmArgs, ldx)]);
    mov(w, ptr[rdi + offsetof(GemmArgs, w)]);
    mov(y, ptr[rdi + offsetof(GemmArgs, y)]);
    mov(ldy, ptr[rdi + offsetof(GemmArgs, ldy)]);
    mov(m, ptr[rdi + offsetof(GemmArgs, m)]);
    test(m, m);
    jle(done, T_NEAR);
    ldtilecfg(ptr[rip + cfg]);
    mov(b_stride, 64);
    L(rows);
    mov(wp, w), mov(yp, y);
    mov(cols, ptr[rdi + offsetof(GemmArgs, n)]);
    L(pairs);
    for (int t = 0; t < 4; ++t) tilezero(Tmm(t));
    mov(a0, a_rows);
    mov(a1, ldx), shl(a1, 4), add(a1, a_rows);
    mov(b, wp);
    mov(steps, spec_.k / AmxBf16Layout::kStepK);
    L(kloop);
    tileloadd(tmm4, ptr[a0 + ldx]);
    tileloadd(tmm6, ptr[b + b_stride]);
    tileloadd(tmm7, ptr[b + b_stride + AmxBf16Layout::kTileBytes]);
    tdpbf16ps(tmm0, tmm4, tmm6);
    tileloadd(tmm5, ptr[a1 + ldx]);
    tdpbf16ps(tmm1, tmm4, tmm7);
    tdpbf16ps(tmm2, tmm5, tmm6);
    tdpbf16ps(tmm3, tmm5, tmm7);
    add(a0, 64), add(a1, 64), add(b, AmxBf16Layout::kStepBytes);
    dec(steps);
    jnz(kloop);
    tilestored(ptr[yp + ldy], tmm0);
    tilestored(ptr[yp + ldy + 64], tmm1);
    mov(b, ldy), shl(b, 4), add(b, yp);
    tilestored(ptr[b + ldy], tmm2);
    tilestored(ptr[b + ldy + 64], tmm3);
    add(wp, ptr[rdi + offsetof(GemmArgs, ldr)]);  // the next column pair
    add(yp, AmxBf16Layout::kPairCols * 4);
    sub(cols, AmxBf16Layout::kPairCols);
    jg(pairs, T_NEAR);
    mov(b, ldx), shl(b, 5), add(a_rows, b);  // the next 32 rows
    mov(b, ldy), shl(b, 5), add(y, b);
    sub(m, kAmxDenseRows);
    jg(rows, T_NEAR);
    tilerelease();
    L(done);
    pop(r15), pop(r14), pop(r13), pop(r12), pop(rbp), pop(rbx);
    ret();
    // ldtilecfg's operand: palette 1, every tile 16 rows x 64 bytes.
    align(64);
    L(cfg);
    for (int i = 0; i < 64; ++i) {
      uint8_t v = 0;
      if (i == 0) v = 1;
      else if (i >= 16 && i < 32 && i % 2 == 0) v = 64;  // colsb low byte of tiles 0..7
      else if (i >= 48 && i < 56) v = 16;                  // rows of tiles 0..7
      db(v);
    }
  }
};

}  // namespace

std::unique_ptr<Emitter> make_amx_bf16_emitter(const KernelSpec& spec) { return std::make_unique<AmxBf16Dense>(spec); }

}  // namespace ckjit::jit
