#pragma once
// The vector-width-independent part of the matmul frames (matmul_avx512_frame.h for zmm,
// matmul_avx2_frame.h for ymm): the stack slots, weight-stream and activation-row addressing, and
// the loops over column groups of nr panels and row blocks of mr rows, each with its tails. A
// frame adds its masks, accumulator registers, float update and epilogues.
#include "jit/x86/emitter.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {

class MatmulFrame : public Emitter {
 protected:
  using Reg64 = Xbyak::Reg64;
  using RegExp = Xbyak::RegExp;
  using Address = Xbyak::Address;
  using Label = Xbyak::Label;
  static constexpr int kQ8KBytes = sizeof(quant::BlockQ8_K);  // 292
  static constexpr int kQ8KQs = 4, kQ8KBsums = 260;

  // vector_bytes: 64 (zmm) or 32 (ymm); block_bytes: bytes of one panel super-block; min_acc:
  // whether a second (min) accumulator is subtracted at the end (Q4_K/Q5_K) or not (Q6_K, Q8_0).
  MatmulFrame(const KernelSpec& s, int vector_bytes, int64_t block_bytes, int64_t k_block, bool min_acc)
      : Emitter(s), vb_(vector_bytes), block_bytes_(block_bytes), min_acc_(min_acc) {
    swiglu_ = s.op == Op::SwiGLU;
    mr_ = s.mr;
    np_ = swiglu_ ? s.nr / 2 : s.nr;
    nb_ = int(s.k / k_block);
    ps_ = int64_t(nb_) * block_bytes;
  }
  // Whether the panel offsets of one column group overflow the 32-bit displacements.
  bool k_too_large() const { return ps_ * np_ > (int64_t(1) << 30); }

  // Emits the work of one super-block for an mr x ns tile: weights through stream(st, off),
  // activations through xrow(m, off); leaves the float accumulators updated.
  virtual void emit_superblock(int mr, int ns) = 0;
  // Stores (or adds the residual to) the finished mr x np tile at rax (y) / rbp (residual).
  virtual void emit_epilogue(int mr, int np, int ns) = 0;
  // Sets the store mask of a column group: `full` groups follow cmp(r13, np_) (equal: the last
  // group, which holds column n-1); tail groups always hold it.
  virtual void emit_group_mask(bool full) = 0;
  // Zeroes a vector register and returns it, for clearing the accumulator slots.
  virtual Xbyak::Xmm emit_zero_vector() = 0;
  virtual void emit_prefetch(int /*ns*/) {}
  // Bytes of one activation block (Q8_K super-block by default).
  virtual int act_block_bytes() const { return kQ8KBytes; }

  int vb_;
  int64_t block_bytes_;
  bool min_acc_;
  bool swiglu_ = false;
  int mr_ = 0, np_ = 0, nb_ = 0;
  int64_t ps_ = 0;

  // Stack: float accumulators (and min accumulators) for 6 rows x 4 streams, then the slots below.
  int acc_bytes() const { return 2 * 6 * 4 * vb_; }
  int off_acc(int m, int st, int ns, bool mins) const { return ((mins ? 6 * 4 : 0) + m * ns + st) * vb_; }
  virtual int off_ygroup() const { return acc_bytes(); }
  virtual int off_rgroup() const { return acc_bytes() + 8; }
  int off_ldx_mr() const { return acc_bytes() + 16; }
  int off_ldy_mr() const { return acc_bytes() + 24; }
  int off_ldr_mr() const { return acc_bytes() + 32; }
  int off_ldy() const { return acc_bytes() + 40; }
  int off_ldr() const { return acc_bytes() + 48; }

  // Register roles. rdi args, r15/rbx weight group bases (gate/up), r14 x of the m-block, rax y of
  // the tile, rbp residual of the tile, r12 rows left, r13 panels left, r11 ldx; inside a body
  // rsi/r8 stream bases, r9/r10 activation rows 0 and 3, ecx super-block counter.
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

  // value of (row m, stream st) = acc - accm (or acc without a min accumulator), into v.
  void load_result(const Xbyak::Xmm& v, int m, int st, int ns) {
    vmovups(v, ptr[rsp + off_acc(m, st, ns, false)]);
    if (min_acc_) vsubps(v, v, ptr[rsp + off_acc(m, st, ns, true)]);
  }

  void push_callee_saved() {
    for (const Reg64& r : {rbx, rbp, r12, r13, r14, r15}) push(r);
  }
  void pop_callee_saved() {
    for (const Reg64& r : {r15, r14, r13, r12, rbp, rbx}) pop(r);
  }

  // Strides and group bases from the arguments into their stack slots, r11 = ldx, r15/rbx = w/w2.
  void emit_load_args() {
    const Reg64 args = rdi;
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
  }

  // Column groups of np_ panels while r13 panels are left, then the one tail group of fewer.
  void emit_group_loop() {
    Label done, group, tails;
    L(group);
    cmp(r13, np_);
    jl(tails, T_NEAR);
    emit_group_mask(true);
    emit_mloop(np_);
    add(r15, int(np_ * ps_));
    add(rbx, int(np_ * ps_));
    add(qword[rsp + off_ygroup()], np_ * vb_);
    add(qword[rsp + off_rgroup()], np_ * vb_);
    sub(r13, np_);
    jmp(group, T_NEAR);
    L(tails);
    for (int np = np_ - 1; np >= 1; --np) {
      Label next;
      cmp(r13, np);
      jne(next, T_NEAR);
      emit_group_mask(false);
      emit_mloop(np);
      jmp(done, T_NEAR);
      L(next);
    }
    L(done);
  }

  // Rows loop of one column group of np output panels.
  virtual void emit_mloop(int np) {
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
    const Xbyak::Xmm zero = emit_zero_vector();
    for (int m = 0; m < mr; ++m)
      for (int st = 0; st < ns; ++st) {
        vmovups(ptr[rsp + off_acc(m, st, ns, false)], zero);
        vmovups(ptr[rsp + off_acc(m, st, ns, true)], zero);
      }
    Label sb;
    L(sb);
    emit_prefetch(ns);
    emit_superblock(mr, ns);
    add(rsi, int(block_bytes_));
    add(r8, int(block_bytes_));
    add(r9, act_block_bytes());
    add(r10, act_block_bytes());
    dec(ecx);
    jnz(sb, T_NEAR);
    emit_epilogue(mr, np, ns);
  }
};

}  // namespace ckjit::jit
