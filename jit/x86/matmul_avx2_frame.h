#pragma once
// Shared scaffolding of the ymm (8-row panel) matmul emitters of the AVX2 and AVX-VNNI paths on top
// of MatmulFrame, the counterpart of matmul_avx512_frame.h: ymm register roles, tail masks, float
// accumulator updates, epilogues (store, residual, SwiGLU). A derived emitter emits one
// super-block; with vnni_ it uses vpdpbusd / vpdpwssd (dot_bytes / dot_words) in the encoding the
// spec names, everything else is the same VEX code on both paths.
#include <bit>

#include "jit/x86/matmul_frame.h"
#include "jit/silu_constants.h"
#include "runtime/error.h"

namespace ckjit::jit {

class MatmulAvx2Frame : public MatmulFrame {
 protected:
  using Ymm = Xbyak::Ymm;
  using Xmm = Xbyak::Xmm;

  MatmulAvx2Frame(const KernelSpec& s, int64_t block_bytes, int64_t k_block, bool min_acc)
      : MatmulFrame(s, 32, block_bytes, k_block, min_acc) {
    if (!is_ymm_path(s.isa)) throw Error(std::string("ymm matmul kernel: not a ymm path: ") + isa_name(s.isa));
    vnni_ = s.isa == IsaPath::AvxVnni;
    enc_ = s.enc == VnniEncoding::Evex ? Xbyak::EvexEncoding : Xbyak::VexEncoding;
    std::string why = register_block_problem(s.isa, s.op, s.mr, s.nr);
    if (!why.empty()) throw Error(std::string(isa_name(s.isa)) + " matmul kernel: " + why);
    if (k_too_large()) throw Error(std::string(isa_name(s.isa)) + " matmul kernel: k too large");
  }

  // acc += Σ4 u8·s8 per dword lane (vpdpbusd; no saturation) and acc += Σ2 s16·s16 (vpdpwssd).
  // Only the AvxVnni path calls them; enc_ picks VEX (AVX-VNNI) or EVEX (AVX512-VNNI + VL).
  void dot_bytes(const Ymm& acc, const Ymm& u8, const Xbyak::Operand& s8) { vpdpbusd(acc, u8, s8, enc_); }
  void dot_words(const Ymm& acc, const Ymm& a, const Xbyak::Operand& b) { vpdpwssd(acc, a, b, enc_); }

  bool vnni_ = false;  // AvxVnni path: derived emitters emit their vpdpbusd super-block
  Xbyak::PreferredEncoding enc_ = Xbyak::VexEncoding;
  Label consts_, iota_, ones16_;

  int off_saved_rsp() const { return acc_bytes() + 56; }
  int off_tailmask() const { return acc_bytes() + 64; }   // 8 dwords: lanes < n%8 (all when 0)
  int off_storemask() const { return acc_bytes() + 96; }  // mask of the current group's last panel
  // VNNI path: the running int32 super-block sum S per (row, stream) lives here, not in a register.
  int off_isum(int m, int st, int ns) const { return acc_bytes() + 128 + (m * ns + st) * 32; }
  int off_scratch(int m) const { return acc_bytes() + 128 + 6 * 4 * 32 + 32 * m; }  // 32 bytes per row
  int frame() const { return acc_bytes() + 128 + 6 * 4 * 32 + 6 * 32; }

  // Registers as in the AVX-512 kernel; ymm: U (int16 sub-block sums; int32 ones on the VNNI
  // path) and S (int32) per (row, stream), W per stream, then yA (activation broadcast), yT
  // (temp), yMask (0x0F bytes).
  // The VNNI path keeps one register per (row, stream), U, and S on the stack (off_isum): vpdpbusd
  // needs no int16 stage, so the freed registers buy taller row blocks (register_block_problem).
  Ymm U(int m, int st, int ns) const { return Ymm(m * ns + st); }
  Ymm S(int m, int st, int ns) const {
    if (vnni_) throw Error("ymm matmul kernel: the VNNI path keeps S on the stack");  // emitter bug
    return Ymm(mr_ * ns + m * ns + st);
  }
  Ymm W(int st, int ns) const { return Ymm((vnni_ ? 1 : 2) * mr_ * ns + st); }

  // VNNI path: S(m, st) += U(m, st) * W(st) (vpmulld: the sub-block scale) with S in its stack slot.
  // `keep` (last sub-block) leaves the finished S in U instead of storing it.
  void vnni_scale_add(int m, int st, int ns, bool first, bool keep) {
    vpmulld(U(m, st, ns), U(m, st, ns), W(st, ns));
    if (!first) vpaddd(U(m, st, ns), U(m, st, ns), ptr[rsp + off_isum(m, st, ns)]);
    if (!keep) vmovdqu(ptr[rsp + off_isum(m, st, ns)], U(m, st, ns));
  }
  const Ymm yA{13}, yT{14}, yMask{15};

  // VNNI path: U = 0 for every (row, stream), then U(m, st) += W(st) · the activation quad at
  // offset x_off of row m (vpdpbusd), quad by quad.
  void vnni_clear_sums(int mr, int ns) {
    for (int m = 0; m < mr; ++m)
      for (int st = 0; st < ns; ++st) vpxor(U(m, st, ns), U(m, st, ns), U(m, st, ns));
  }
  void vnni_dot_quad(int mr, int ns, int x_off) {
    for (int m = 0; m < mr; ++m) {
      vpbroadcastd(yA, ptr[xrow(m, x_off)]);
      for (int st = 0; st < ns; ++st) dot_bytes(U(m, st, ns), W(st, ns), yA);
    }
  }

  // U(m, st) (+)= W(st) · yA as int16 pairs in int32 (vpmaddwd; vpdpwssd on the VNNI path);
  // `first` starts it.
  void word_dot(int m, int st, int ns, bool first) {
    if (first) {
      vpmaddwd(U(m, st, ns), W(st, ns), yA);
    } else if (vnni_) {
      dot_words(U(m, st, ns), W(st, ns), yA);
    } else {
      vpmaddwd(yT, W(st, ns), yA);
      vpaddd(U(m, st, ns), U(m, st, ns), yT);
    }
  }

  // madd path: U(m, st) (+)= W(st) · yA as u8·s8 pairs in int16 (vpmaddubsw); `first` starts it.
  void madd_bytes(int m, int st, int ns, bool first) {
    if (first) {
      vpmaddubsw(U(m, st, ns), W(st, ns), yA);
    } else {
      vpmaddubsw(yT, W(st, ns), yA);
      vpaddw(U(m, st, ns), U(m, st, ns), yT);
    }
  }
  // madd path: S(m, st) (+)= U(m, st) · W(st) as int16 pairs in int32 (vpmaddwd); `first` starts
  // it, otherwise U is clobbered.
  void madd_scale(int m, int st, int ns, bool first) {
    if (first) {
      vpmaddwd(S(m, st, ns), U(m, st, ns), W(st, ns));
    } else {
      vpmaddwd(U(m, st, ns), U(m, st, ns), W(st, ns));
      vpaddd(S(m, st, ns), S(m, st, ns), U(m, st, ns));
    }
  }

  Address cst(int index) { return ptr[rip + consts_ + index * 4]; }

  // Call at the end of the derived constructor.
  void generate() {
    const Reg64 args = rdi;
    push_callee_saved();
    // A 64-byte aligned frame: the stack slots are read and written every sub-block, and a
    // misaligned ymm access may split a cache line.
    mov(rax, rsp);
    sub(rsp, frame());
    and_(rsp, -64);
    mov(ptr[rsp + off_saved_rsp()], rax);
    emit_load_args();
    // Tail mask: lane i active when i < n%8 (every lane when n%8 == 0).
    mov(rax, ptr[args + 72]);
    mov(ecx, eax);
    and_(ecx, 7);
    mov(edx, 8);
    test(ecx, ecx);
    cmovz(ecx, edx);
    vmovd(Xmm(yT.getIdx()), ecx);
    vpbroadcastd(yT, Xmm(yT.getIdx()));
    vmovdqu(yA, ptr[rip + iota_]);  // 0..7
    vpcmpgtd(yT, yT, yA);
    vmovdqu(ptr[rsp + off_tailmask()], yT);
    lea(r13, ptr[rax + 7]);
    shr(r13, 3);
    vpbroadcastd(yMask, cst(0));
    emit_group_loop();
    vzeroupper();
    mov(rsp, ptr[rsp + off_saved_rsp()]);
    pop_callee_saved();
    ret();
    emit_constants();
  }

  // The store mask of the group's last panel: all lanes unless it holds column n-1.
  void emit_group_mask(bool full) override {
    if (full) {
      Label set;
      vpcmpeqd(yT, yT, yT);
      jne(set);
      vmovdqu(yT, ptr[rsp + off_tailmask()]);
      L(set);
    } else {
      vmovdqu(yT, ptr[rsp + off_tailmask()]);
    }
    vmovdqu(ptr[rsp + off_storemask()], yT);
  }

  void emit_constants() {
    align(64);
    L(consts_);
    const float f[] = {kLog2e, kLn2Hi, kLn2Lo, kExpLo, kExpHi, 1.0f};
    dd(0x0F0F0F0F);  // 0
    dd(0x00010001);  // 1
    dd(127);         // 2
    for (float v : f) dd(std::bit_cast<uint32_t>(v));  // 3..8
    for (float v : kExpPoly) dd(std::bit_cast<uint32_t>(v));  // 9..16
    dd(0x80808080);  // 17: byte bias of the Q8_0 VNNI kernel
    align(32);
    L(iota_);
    for (int i = 0; i < 8; ++i) dd(uint32_t(i));
    L(ones16_);
    for (int i = 0; i < 8; ++i) dd(0x00010001);
  }

  // Loads the (v, v) word pairs of 8 unsigned bytes at addr into y: zero-extend, then * 0x10001.
  void load_pairs(const Ymm& y, const Address& addr) {
    vpmovzxbd(y, addr);
    vpbroadcastd(yA, cst(1));
    vpmulld(y, y, yA);
  }

  Xbyak::Xmm emit_zero_vector() override {
    vpxor(yT, yT, yT);
    return yT;
  }

  // Pulls the weight blocks pf ahead into L2 (past-the-end prefetches are harmless).
  void emit_prefetch(int ns) override {
    if (spec_.pf > 0)
      for (int st = 0; st < ns; ++st)
        for (int64_t off = 0; off < block_bytes_; off += 64) prefetcht1(ptr[stream(st, spec_.pf * block_bytes_ + off)]);
  }

  virtual void emit_load_act_scale(const Ymm& y, int m) { vbroadcastss(y, ptr[xrow(m, 0)]); }

  // acc = fma(float(v), f16(d)*D, acc) per (row, stream); v = S (or U into the min accumulator).
  // On the VNNI path v is always U: the caller leaves S (or M) there first.
  void emit_float_update(int mr, int ns, bool mins, int64_t d_off) {
    for (int st = 0; st < ns; ++st) vcvtph2ps(W(st, ns), ptr[stream(st, d_off)]);
    for (int m = 0; m < mr; ++m) {
      for (int st = 0; st < ns; ++st) {
        Ymm v = mins || vnni_ ? U(m, st, ns) : S(m, st, ns);
        int off = off_acc(m, st, ns, mins);
        emit_load_act_scale(yA, m);
        vmulps(yA, W(st, ns), yA);
        vcvtdq2ps(v, v);
        vmovups(yT, ptr[rsp + off]);
        vfmadd231ps(yT, v, yA);
        vmovups(ptr[rsp + off], yT);
      }
    }
  }

  void emit_epilogue(int mr, int np, int ns) override {
    mov(rdx, rax);
    mov(rsi, rbp);
    const Ymm mask(6);
    for (int m = 0; m < mr; ++m) {
      for (int q = 0; q < np; ++q) {
        const bool last = q == np - 1;
        const Ymm y(0), u(1), t(2);
        if (last) vmovdqu(mask, ptr[rsp + off_storemask()]);
        if (swiglu_) {
          load_result(y, m, 2 * q, ns);
          load_result(u, m, 2 * q + 1, ns);
          emit_silu_mul(y, u);
        } else {
          load_result(y, m, q, ns);
          if (spec_.epilogue == Epilogue::ResidualAdd) {
            if (last) vmaskmovps(t, mask, ptr[rsi + q * 32]);
            else vmovups(t, ptr[rsi + q * 32]);
            vaddps(y, y, t);
          }
        }
        if (last) vmaskmovps(ptr[rdx + q * 32], mask, y);
        else vmovups(ptr[rdx + q * 32], y);
      }
      if (m + 1 < mr) {
        add(rdx, ptr[rsp + off_ldy()]);
        if (spec_.epilogue == Epilogue::ResidualAdd) add(rsi, ptr[rsp + off_ldr()]);
      }
    }
  }

  // g <- (g / (1 + exp(-g))) * u in the order of silu_constants.h; 2^n is built from exponent
  // bits (n is in [-126, 127] after the clamp), then one rounding multiply like vscalefps.
  void emit_silu_mul(const Ymm& g, const Ymm& u) {
    const Ymm x(2), n(3), r(4), p(5), c(7);
    vxorps(x, x, x);
    vsubps(x, x, g);
    vbroadcastss(c, cst(6));
    vmaxps(x, x, c);
    vbroadcastss(c, cst(7));
    vminps(x, x, c);
    vbroadcastss(c, cst(3));
    vmulps(n, x, c);
    vroundps(n, n, 0);
    vmovaps(r, x);
    vbroadcastss(c, cst(4));
    vfnmadd231ps(r, n, c);
    vbroadcastss(c, cst(5));
    vfnmadd231ps(r, n, c);
    vbroadcastss(p, cst(9));
    for (int i = 1; i < 8; ++i) {
      vbroadcastss(c, cst(9 + i));
      vfmadd213ps(p, r, c);
    }
    vcvtps2dq(n, n);
    vpbroadcastd(c, cst(2));
    vpaddd(n, n, c);
    vpslld(n, n, 23);
    vmulps(p, p, n);
    vbroadcastss(c, cst(8));
    vaddps(p, p, c);
    vdivps(g, g, p);
    vmulps(g, g, u);
  }
};

}  // namespace ckjit::jit
