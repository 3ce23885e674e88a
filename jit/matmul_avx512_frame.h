#pragma once
// Shared scaffolding of the AVX-512 (zmm, 16-row panel) matmul emitters: argument loading, the
// loop over column groups of nr panels (tails with fewer panels), the loop over row blocks of mr
// rows (tails with fewer rows), float accumulators on the stack, and the epilogues (store,
// residual add, SwiGLU). A derived emitter only emits the work of one super-block.
#include <bit>

#include "jit/emitter.h"
#include "jit/silu_constants.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {

class MatmulAvx512Frame : public Emitter {
 protected:
  using Zmm = Xbyak::Zmm;
  using Reg64 = Xbyak::Reg64;
  using RegExp = Xbyak::RegExp;
  using Address = Xbyak::Address;
  using Label = Xbyak::Label;
  static constexpr int kQ8KBytes = sizeof(quant::BlockQ8_K);  // 292
  static constexpr int kQ8KQs = 4, kQ8KBsums = 260;

  // block_bytes: bytes of one panel super-block; min_acc: whether a second (min) accumulator is
  // subtracted at the end (Q4_K/Q5_K) or not (Q6_K, Q8_0).
  MatmulAvx512Frame(const KernelSpec& s, int64_t block_bytes, int64_t k_block, bool min_acc)
      : Emitter(s), block_bytes_(block_bytes), min_acc_(min_acc) {
    swiglu_ = s.op == Op::SwiGLU;
    mr_ = s.mr;
    np_ = swiglu_ ? s.nr / 2 : s.nr;
    nb_ = int(s.k / k_block);
    ps_ = int64_t(nb_) * block_bytes;
    // (AMX kernels derive from this frame for its constants and epilogue helpers only.)
    if (s.isa != IsaPath::Amx) {
      std::string why = register_block_problem(IsaPath::Avx512, s.op, s.mr, s.nr);
      if (!why.empty()) throw Error("avx512 matmul kernel: " + why);
    }
    if (ps_ * np_ > (int64_t(1) << 30)) throw Error("avx512 matmul kernel: k too large");
  }

  // Emits the work of one super-block for an mr x ns tile: read weights through stream(st, off),
  // activations through xrow(m, off), and leave the float accumulators updated (float_update).
  // May use T/S/W registers and zD, zF, zA; zLo/zHi hold 0x0F/0xF0 bytes.
  virtual void emit_superblock(int mr, int ns) = 0;

  int64_t block_bytes_;
  bool min_acc_;
  bool swiglu_ = false;
  int mr_ = 0, np_ = 0, nb_ = 0;
  int64_t ps_ = 0;
  Label consts_;

  int acc_bytes() const { return 2 * 6 * 4 * 64; }
  int off_acc(int m, int st, int ns, bool mins) const { return ((mins ? 6 * 4 : 0) + m * ns + st) * 64; }
  int off_ygroup() const { return acc_bytes(); }
  int off_rgroup() const { return acc_bytes() + 8; }
  int off_ldx_mr() const { return acc_bytes() + 16; }
  int off_ldy_mr() const { return acc_bytes() + 24; }
  int off_ldr_mr() const { return acc_bytes() + 32; }
  int off_ldy() const { return acc_bytes() + 40; }
  int off_ldr() const { return acc_bytes() + 48; }
  int off_scratch() const { return acc_bytes() + 64; }  // 256 bytes for the derived emitter
  int frame() const { return acc_bytes() + 64 + 256; }

  // Register roles. rdi args, r15/rbx weight group bases (gate/up), r14 x of the m-block, rax y of
  // the tile, rbp residual of the tile, r12 rows left, r13 panels left, r11 ldx; inside a body
  // rsi/r8 stream bases, r9/r10 activation rows 0 and 3, ecx super-block counter.
  Zmm T(int m, int st, int ns) const { return Zmm(m * ns + st); }
  Zmm S(int m, int st, int ns) const { return Zmm(mr_ * ns + m * ns + st); }
  Zmm W(int st, int ns) const { return Zmm(2 * mr_ * ns + st); }
  const Zmm zD{27}, zF{28}, zA{29}, zLo{30}, zHi{31};

  RegExp stream(int st, int64_t off) const {
    if (!swiglu_) return rsi + int(st * ps_ + off);
    return (st % 2 == 0 ? rsi : r8) + int((st / 2) * ps_ + off);
  }
  RegExp xrow(int m, int off) const {
    const Reg64& base = m < 3 ? r9 : r10;
    switch (m % 3) {
      case 0: return base + off;
      case 1: return base + r11 + off;
      default: return base + r11 * 2 + off;
    }
  }
  Address cst(int index) { return ptr_b[rip + consts_ + index * 4]; }
  Address cst_scalar(int index) { return ptr[rip + consts_ + index * 4]; }

  // Call at the end of the derived constructor.
  void generate() {
    const Reg64 args = rdi;
    for (const Reg64& r : {rbx, rbp, r12, r13, r14, r15}) push(r);
    sub(rsp, frame());
    mov(r11, ptr[args + 24]);
    mov(rax, ptr[args + 32]);
    mov(ptr[rsp + off_ygroup()], rax);
    mov(rax, ptr[args + 48]);
    mov(ptr[rsp + off_rgroup()], rax);
    mov(rax, r11);
    imul(rax, rax, mr_);
    mov(ptr[rsp + off_ldx_mr()], rax);
    mov(rax, ptr[args + 40]);
    mov(ptr[rsp + off_ldy()], rax);
    imul(rax, rax, mr_);
    mov(ptr[rsp + off_ldy_mr()], rax);
    mov(rax, ptr[args + 56]);
    mov(ptr[rsp + off_ldr()], rax);
    imul(rax, rax, mr_);
    mov(ptr[rsp + off_ldr_mr()], rax);
    mov(r15, ptr[args + 0]);
    mov(rbx, ptr[args + 8]);
    // k2 = store mask of the panel holding column n-1; r13 = panels to do.
    mov(rax, ptr[args + 72]);
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

    Label done, group;
    L(group);
    cmp(r13, np_);
    Label tails;
    jl(tails, T_NEAR);
    {
      Label not_last, go;
      kxnorw(k3, k3, k3);
      jne(not_last);
      kmovw(k3, k2);
      L(not_last);
      emit_mloop(np_);
      add(r15, int(np_ * ps_));
      add(rbx, int(np_ * ps_));
      add(qword[rsp + off_ygroup()], np_ * 64);
      add(qword[rsp + off_rgroup()], np_ * 64);
      sub(r13, np_);
      jmp(group, T_NEAR);
    }
    L(tails);
    for (int np = np_ - 1; np >= 1; --np) {
      Label next;
      cmp(r13, np);
      jne(next, T_NEAR);
      kmovw(k3, k2);
      emit_mloop(np);
      jmp(done, T_NEAR);
      L(next);
    }
    L(done);
    vzeroupper();
    add(rsp, frame());
    for (const Reg64& r : {r15, r14, r13, r12, rbp, rbx}) pop(r);
    ret();
    emit_constants();
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

  // Rows loop of one column group of np output panels.
  void emit_mloop(int np) {
    mov(r12, ptr[rdi + 64]);
    mov(r14, ptr[rdi + 16]);
    mov(rax, ptr[rsp + off_ygroup()]);
    mov(rbp, ptr[rsp + off_rgroup()]);
    Label loop, tails, done;
    L(loop);
    cmp(r12, mr_);
    jl(tails, T_NEAR);
    emit_body(mr_, np);
    add(r14, ptr[rsp + off_ldx_mr()]);
    add(rax, ptr[rsp + off_ldy_mr()]);
    add(rbp, ptr[rsp + off_ldr_mr()]);
    sub(r12, mr_);
    jmp(loop, T_NEAR);
    L(tails);
    for (int mr = mr_ - 1; mr >= 1; --mr) {
      Label next;
      cmp(r12, mr);
      jne(next, T_NEAR);
      emit_body(mr, np);
      jmp(done, T_NEAR);
      L(next);
    }
    L(done);
  }

  // One mr x np micro-tile over the whole K.
  void emit_body(int mr, int np) {
    const int ns = swiglu_ ? 2 * np : np;
    mov(rsi, r15);
    mov(r8, rbx);
    mov(r9, r14);
    lea(r10, ptr[r11 + r11 * 2]);
    add(r10, r9);
    mov(ecx, nb_);
    vpxord(zA, zA, zA);
    for (int m = 0; m < mr; ++m)
      for (int st = 0; st < ns; ++st) {
        vmovups(ptr[rsp + off_acc(m, st, ns, false)], zA);
        vmovups(ptr[rsp + off_acc(m, st, ns, true)], zA);
      }
    Label sb;
    L(sb);
    if (spec_.pf > 0)  // pull the weight blocks pf ahead into L2 (past-the-end prefetches are harmless)
      for (int st = 0; st < ns; ++st)
        for (int64_t off = 0; off < block_bytes_; off += 64) prefetcht1(ptr[stream(st, spec_.pf * block_bytes_ + off)]);
    emit_superblock(mr, ns);
    add(rsi, int(block_bytes_));
    add(r8, int(block_bytes_));
    add(r9, act_block_bytes());
    add(r10, act_block_bytes());
    dec(ecx);
    jnz(sb, T_NEAR);
    emit_epilogue(mr, np, ns);
  }

  // Bytes of one activation block (Q8_K super-block by default).
  virtual int act_block_bytes() const { return kQ8KBytes; }
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

  // value of (row m, stream st) = acc - accm (or acc without a min accumulator), into z.
  void load_result(const Zmm& z, int m, int st, int ns) {
    vmovups(z, ptr[rsp + off_acc(m, st, ns, false)]);
    if (min_acc_) vsubps(z, z, ptr[rsp + off_acc(m, st, ns, true)]);
  }

  void emit_epilogue(int mr, int np, int ns) {
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
