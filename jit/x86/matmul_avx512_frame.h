#pragma once
// Shared scaffolding of the AVX-512 (zmm, 16-row panel) matmul emitters on top of MatmulFrame:
// zmm register roles, the k2/k3 store masks, float accumulator updates, the epilogues (store,
// residual add, SwiGLU) and their constants. A derived emitter only emits one super-block.
#include <bit>

#include "jit/x86/matmul_frame.h"
#include "jit/silu_constants.h"
#include "runtime/error.h"

namespace ckjit::jit {

class MatmulAvx512Frame : public MatmulFrame {
 protected:
  using Zmm = Xbyak::Zmm;

  MatmulAvx512Frame(const KernelSpec& s, int64_t block_bytes, int64_t k_block, bool min_acc)
      : MatmulFrame(s, 64, block_bytes, k_block, min_acc) {
    // (AMX kernels derive from this frame for its group loop, masks, constants and SwiGLU only.)
    if (s.isa != IsaPath::Amx) {
      std::string why = register_block_problem(IsaPath::Avx512, s.op, s.mr, s.nr);
      if (!why.empty()) throw Error("avx512 matmul kernel: " + why);
    }
    if (k_too_large()) throw Error("avx512 matmul kernel: k too large");
  }

  Label consts_;

  int off_scratch() const { return acc_bytes() + 64; }  // 256 bytes for the derived emitter
  int frame() const { return acc_bytes() + 64 + 256; }

  // emit_superblock may use T/S/W registers and zD, zF, zA; zLo/zHi hold 0x0F/0xF0 bytes.
  Zmm T(int m, int st, int ns) const { return Zmm(m * ns + st); }
  Zmm S(int m, int st, int ns) const { return Zmm(mr_ * ns + m * ns + st); }
  Zmm W(int st, int ns) const { return Zmm(2 * mr_ * ns + st); }
  const Zmm zD{27}, zF{28}, zA{29}, zLo{30}, zHi{31};

  Address cst(int index) { return ptr_b[rip + consts_ + index * 4]; }
  Address cst_scalar(int index) { return ptr[rip + consts_ + index * 4]; }

  // Call at the end of the derived constructor.
  void generate() {
    push_callee_saved();
    sub(rsp, frame());
    emit_load_args();
    emit_panel_setup();
    emit_group_loop();
    vzeroupper();
    add(rsp, frame());
    pop_callee_saved();
    ret();
    emit_constants();
  }

  // k2 = store mask of the panel holding column n-1 (args +72: n), r13 = panels to do, zLo/zHi
  // the nibble masks.
  void emit_panel_setup() {
    mov(rax, ptr[rdi + 72]);
    mov(ecx, eax);
    and_(ecx, 15);
    mov(edx, 1);
    shl(edx, cl);
    dec(edx);
    mov(r8d, 0xFFFF);
    test(ecx, ecx);
    cmovz(edx, r8d);
    kmovw(k2, edx);
    lea(r13, ptr[rax + 15]);
    shr(r13, 4);
    vpbroadcastd(zLo, cst_scalar(0));
    vpbroadcastd(zHi, cst_scalar(1));
  }

  // k3 = store mask of the group's last panel: all lanes unless it holds column n-1.
  void emit_group_mask(bool full) override {
    if (!full) {
      kmovw(k3, k2);
      return;
    }
    Label not_last;
    kxnorw(k3, k3, k3);
    jne(not_last);
    kmovw(k3, k2);
    L(not_last);
  }

  void emit_constants() {
    align(64);
    L(consts_);
    const float f[] = {kLog2e, kLn2Hi, kLn2Lo, kExpLo, kExpHi, 1.0f};
    dd(0x0F0F0F0F);  // 0
    dd(0xF0F0F0F0);  // 1
    dd(0x00010001);  // 2
    for (float v : f) dd(std::bit_cast<uint32_t>(v));         // 3..8
    for (float v : kExpPoly) dd(std::bit_cast<uint32_t>(v));  // 9..16
    dd(0x80808080);  // 17
  }

  Xbyak::Xmm emit_zero_vector() override {
    vpxord(zA, zA, zA);
    return zA;
  }

  // Pulls the weight blocks pf ahead into L2 (past-the-end prefetches are harmless).
  void emit_prefetch(int ns) override {
    if (spec_.pf > 0)
      for (int st = 0; st < ns; ++st)
        for (int64_t off = 0; off < block_bytes_; off += 64) prefetcht1(ptr[stream(st, spec_.pf * block_bytes_ + off)]);
  }

  // Broadcasts the activation block scale D of row m (Q8_K: the f32 at offset 0).
  virtual void emit_load_act_scale(const Zmm& z, int m) { vbroadcastss(z, ptr[xrow(m, 0)]); }

  // acc = fma(float(v), f16(d)*D, acc) for every (row, stream), v = S registers (or T with mins,
  // into the min accumulator); d: f16 per column at d_off in the panel block; D: the f32 at
  // activation offset 0.
  void emit_float_update(int mr, int ns, bool mins, int64_t d_off) {
    for (int st = 0; st < ns; ++st) vcvtph2ps(W(st, ns), ptr[stream(st, d_off)]);
    for (int m = 0; m < mr; ++m) {
      emit_load_act_scale(zD, m);
      for (int st = 0; st < ns; ++st) {
        Zmm v = mins ? T(m, st, ns) : S(m, st, ns);
        int off = off_acc(m, st, ns, mins);
        vmulps(zF, W(st, ns), zD);
        vcvtdq2ps(v, v);
        vmovups(zA, ptr[rsp + off]);
        vfmadd231ps(zA, v, zF);
        vmovups(ptr[rsp + off], zA);
      }
    }
  }

  void emit_epilogue(int mr, int np, int ns) override {
    mov(rdx, rax);
    mov(rsi, rbp);
    for (int m = 0; m < mr; ++m) {
      for (int q = 0; q < np; ++q) {
        const bool last = q == np - 1;
        const Zmm y = Zmm(0), u = Zmm(1);
        if (swiglu_) {
          load_result(y, m, 2 * q, ns);
          load_result(u, m, 2 * q + 1, ns);
          emit_silu_mul(y, u);
        } else {
          load_result(y, m, q, ns);
          if (spec_.epilogue == Epilogue::ResidualAdd) {
            if (last) vmovups(Zmm(2) | k3 | T_z, ptr[rsi + q * 64]);
            else vmovups(Zmm(2), ptr[rsi + q * 64]);
            vaddps(y, y, Zmm(2));
          }
        }
        if (last) vmovups(ptr[rdx + q * 64] | k3, y);
        else vmovups(ptr[rdx + q * 64], y);
      }
      if (m + 1 < mr) {
        add(rdx, ptr[rsp + off_ldy()]);
        if (spec_.epilogue == Epilogue::ResidualAdd) add(rsi, ptr[rsp + off_ldr()]);
      }
    }
  }

  // g <- (g / (1 + exp(-g))) * u, the order of silu_constants.h. Uses zmm2..zmm5.
  void emit_silu_mul(const Zmm& g, const Zmm& u) {
    const Zmm x(2), n(3), r(4), p(5);
    vxorps(x, x, x);
    vsubps(x, x, g);  // -g exactly
    vmaxps(x, x, cst(6));
    vminps(x, x, cst(7));
    vmulps(n, x, cst(3));
    vrndscaleps(n, n, 0);  // round half to even
    vmovaps(r, x);
    vfnmadd231ps(r, n, cst(4));  // r = x - n*ln2_hi == fma(n, -ln2_hi, x)
    vfnmadd231ps(r, n, cst(5));  // r = fma(n, -ln2_lo, r)
    vbroadcastss(p, ptr[rip + consts_ + 9 * 4]);
    for (int i = 1; i < 8; ++i) vfmadd213ps(p, r, cst(9 + i));  // p = p*r + c
    vscalefps(p, p, n);
    vaddps(p, p, cst(8));  // 1 + exp(-g)
    vdivps(g, g, p);
    vmulps(g, g, u);
  }
};

}  // namespace ckjit::jit
