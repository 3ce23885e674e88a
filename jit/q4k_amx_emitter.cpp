// Q4_K x Q8_K matmul with AMX-INT8 (emitted for CPUs that grant AMX tile data): GEMM, GEMV and
// fused Gate-Up SwiGLU on tiles of 16 activation rows x 16 weight columns.
// Per 32-element sub-block: the masked nibbles of each weight panel (0x0F, or 0xF0 = 16·q as in
// the AVX-512 kernel) are written as a B tile (8 quad rows x 64 bytes: the panel layout is already
// VNNI order), the 16 activation rows' 32 quants are loaded as the A tile straight from the Q8_K
// rows (stride ldx), and tdpbsud (signed A x unsigned B) gives the 16x16 int32 sums T. T is
// scaled by 16·sc / sc per column (vpmulld) into S in memory; then, per super-block and row,
// exactly the AVX-512 kernel's sums and float order (S >> 4, M by vpdpwssd,
// acc = fma(float(S), f16(d)·D, acc), accm = fma(float(M), f16(dmin)·D, accm), y = acc − accm).
// Row tails use a tile configuration with fewer rows, set at run time.
#include "jit/amx_tile_config.h"
#include "jit/matmul_avx512_frame.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {
namespace {

class Q4KAmx : public MatmulAvx512Frame {
 public:
  explicit Q4KAmx(const KernelSpec& s)
      : MatmulAvx512Frame(s, Q4KPanelLayout{16}.bytes(), quant::QK_K, true), cfg_(amx_tile_config(s)) {
    generate_amx();
  }

 private:
  const Q4KPanelLayout L_{16};
  AmxTileConfig cfg_;
  // Stack frame.
  static constexpr int kCfg = 0, kB = 64, kC = kB + 2 * 512, kS = kC + 2 * 1024, kAcc = kS + 2 * 1024,
                       kAccm = kAcc + 2 * 1024, kLoc = kAccm + 2 * 1024, kFrame = kLoc + 128;
  static constexpr int kYGroup = kLoc, kRGroup = kLoc + 8, kLdy = kLoc + 16, kLdr = kLoc + 24, kRows = kLoc + 32,
                       kSpill = kLoc + 40;

  int streams(int np) const { return swiglu_ ? 2 * np : np; }
  void emit_superblock(int, int) override {}  // unused: the AMX body is emitted whole

  void generate_amx() {
    const Reg64 args = rdi;
    for (const Reg64& r : {rbx, rbp, r12, r13, r14, r15}) push(r);
    sub(rsp, kFrame);
    // Static tile configuration; the row counts are patched per body.
    for (int i = 0; i < 64; i += 8) {
      uint64_t q = 0;
      for (int b = 0; b < 8; ++b) q |= uint64_t(cfg_.bytes[size_t(i + b)]) << (8 * b);
      mov(rdx, q);
      mov(ptr[rsp + kCfg + i], rdx);
    }
    mov(r11, ptr[args + 24]);
    mov(rax, ptr[args + 32]);
    mov(ptr[rsp + kYGroup], rax);
    mov(rax, ptr[args + 48]);
    mov(ptr[rsp + kRGroup], rax);
    mov(rax, ptr[args + 40]);
    mov(ptr[rsp + kLdy], rax);
    mov(rax, ptr[args + 56]);
    mov(ptr[rsp + kLdr], rax);
    mov(r15, ptr[args + 0]);
    mov(rbx, ptr[args + 8]);
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

    Label done, group, tails;
    L(group);
    cmp(r13, np_);
    jl(tails, T_NEAR);
    {
      Label set;
      kxnorw(k3, k3, k3);
      jne(set);
      kmovw(k3, k2);
      L(set);
      emit_mloop(np_);
      add(r15, int(np_ * ps_));
      add(rbx, int(np_ * ps_));
      add(qword[rsp + kYGroup], np_ * 64);
      add(qword[rsp + kRGroup], np_ * 64);
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
    tilerelease();
    vzeroupper();
    add(rsp, kFrame);
    for (const Reg64& r : {r15, r14, r13, r12, rbp, rbx}) pop(r);
    ret();
    emit_constants();
  }

  void emit_mloop(int np) {
    mov(r12, ptr[rdi + 64]);
    mov(r14, ptr[rdi + 16]);
    mov(rax, ptr[rsp + kYGroup]);
    mov(rbp, ptr[rsp + kRGroup]);
    Label loop, done;
    L(loop);
    test(r12, r12);
    jle(done, T_NEAR);
    emit_body(np);
    mov(rdx, r11);
    shl(rdx, 4);
    add(r14, rdx);
    mov(rdx, ptr[rsp + kLdy]);
    shl(rdx, 4);
    add(rax, rdx);
    mov(rdx, ptr[rsp + kLdr]);
    shl(rdx, 4);
    add(rbp, rdx);
    sub(r12, 16);
    jmp(loop, T_NEAR);
    L(done);
  }

  // Runtime loop over the body's rows: r10 counts down from [kRows], rdx = row * 64.
  template <class F>
  void row_loop(F&& f) {
    Label l;
    mov(r10, ptr[rsp + kRows]);
    xor_(edx, edx);
    L(l);
    f();
    add(rdx, 64);
    dec(r10);
    jnz(l, T_NEAR);
  }

  void emit_body(int np) {
    const int ns = streams(np);
    // rows = min(16, rows left); patch the A and C tile rows and load the configuration.
    mov(r10, r12);
    mov(edx, 16);
    cmp(r10, rdx);
    cmovg(r10, rdx);
    mov(ptr[rsp + kRows], r10);
    for (int t = 0; t < ns; ++t) mov(byte[rsp + kCfg + 48 + t], r10b);
    mov(byte[rsp + kCfg + 48 + AmxTileConfig::kATile], r10b);
    ldtilecfg(ptr[rsp + kCfg]);
    vpxord(zA, zA, zA);
    for (int st = 0; st < ns; ++st)
      for (int q = 0; q < 16; ++q) {
        vmovdqu32(ptr[rsp + kAcc + st * 1024 + q * 64], zA);
        vmovdqu32(ptr[rsp + kAccm + st * 1024 + q * 64], zA);
      }
    mov(rsi, r15);
    mov(r8, rbx);
    mov(r9, r14);
    mov(ecx, nb_);
    Label sb;
    L(sb);
    for (int st = 0; st < ns; ++st)
      for (int q = 0; q < 16; ++q) vmovdqu32(ptr[rsp + kS + st * 1024 + q * 64], zA);
    for (int s = 0; s < 8; ++s) {
      const Zmm& mask = s % 2 == 0 ? zLo : zHi;
      mov(edx, 64);
      for (int st = 0; st < ns; ++st) {
        for (int j = 0; j < 8; ++j) {
          vpandd(Zmm(0), mask, ptr[stream(st, L_.quad(s, j))]);
          vmovdqu32(ptr[rsp + kB + st * 512 + j * 64], Zmm(0));
        }
        tileloadd(Xbyak::Tmm(AmxTileConfig::kBTile0 + st), ptr[rsp + rdx + kB + st * 512]);
      }
      tileloadd(Xbyak::Tmm(AmxTileConfig::kATile), ptr[r9 + r11 + kQ8KQs + 32 * s]);
      for (int st = 0; st < ns; ++st) {
        tilezero(Xbyak::Tmm(st));
        tdpbsud(Xbyak::Tmm(st), Xbyak::Tmm(AmxTileConfig::kATile), Xbyak::Tmm(AmxTileConfig::kBTile0 + st));
        tilestored(ptr[rsp + rdx + kC + st * 1024], Xbyak::Tmm(st));
      }
      for (int st = 0; st < ns; ++st) {
        vpmovzxbd(Zmm(1 + st), ptr[stream(st, L_.sc(s))]);
        if (s % 2 == 0) vpslld(Zmm(1 + st), Zmm(1 + st), 4);
      }
      row_loop([&] {
        for (int st = 0; st < ns; ++st) {
          vmovdqu32(Zmm(3), ptr[rsp + rdx + kC + st * 1024]);
          vpmulld(Zmm(3), Zmm(3), Zmm(1 + st));
          vpaddd(Zmm(3), Zmm(3), ptr[rsp + rdx + kS + st * 1024]);
          vmovdqu32(ptr[rsp + rdx + kS + st * 1024], Zmm(3));
        }
      });
    }
    // Per row: S >> 4, the min term and the float update.
    vpbroadcastd(zD, cst_scalar(2));
    for (int st = 0; st < ns; ++st) {
      for (int s = 0; s < 8; ++s) {
        vpmovzxbd(Zmm(8 + 8 * st + s), ptr[stream(st, L_.mn(s))]);
        vpmulld(Zmm(8 + 8 * st + s), Zmm(8 + 8 * st + s), zD);
      }
      vcvtph2ps(Zmm(4 + st), ptr[stream(st, L_.d())]);
      vcvtph2ps(Zmm(6 + st), ptr[stream(st, L_.dmin())]);
    }
    mov(ptr[rsp + kSpill], r13);
    mov(r13, r9);
    row_loop([&] {
      vbroadcastss(zD, ptr[r13]);
      for (int st = 0; st < ns; ++st) {
        vmovdqu32(Zmm(0), ptr[rsp + rdx + kS + st * 1024]);
        vpsrad(Zmm(0), Zmm(0), 4);
        vcvtdq2ps(Zmm(0), Zmm(0));
        vmulps(zF, Zmm(4 + st), zD);
        vmovups(zA, ptr[rsp + rdx + kAcc + st * 1024]);
        vfmadd231ps(zA, Zmm(0), zF);
        vmovups(ptr[rsp + rdx + kAcc + st * 1024], zA);
        vpxord(Zmm(1), Zmm(1), Zmm(1));
        for (int s = 0; s < 8; ++s) vpdpwssd(Zmm(1), Zmm(8 + 8 * st + s), ptr_b[r13 + kQ8KBsums + 4 * s]);
        vcvtdq2ps(Zmm(1), Zmm(1));
        vmulps(zF, Zmm(6 + st), zD);
        vmovups(zA, ptr[rsp + rdx + kAccm + st * 1024]);
        vfmadd231ps(zA, Zmm(1), zF);
        vmovups(ptr[rsp + rdx + kAccm + st * 1024], zA);
      }
      add(r13, r11);
    });
    mov(r13, ptr[rsp + kSpill]);
    vpxord(zA, zA, zA);
    add(rsi, int(L_.bytes()));
    add(r8, int(L_.bytes()));
    add(r9, kQ8KBytes);
    dec(ecx);
    jnz(sb, T_NEAR);
    emit_rows_epilogue(np, ns);
  }

  void emit_rows_epilogue(int np, int ns) {
    mov(ptr[rsp + kSpill], r13);
    mov(r13, rax);  // y row
    mov(r9, rbp);   // residual row
    row_loop([&] {
      for (int q = 0; q < np; ++q) {
        const bool last = q == np - 1;
        const Zmm y(0), u(1);
        auto result = [&](const Zmm& z, int st) {
          vmovups(z, ptr[rsp + rdx + kAcc + st * 1024]);
          vsubps(z, z, ptr[rsp + rdx + kAccm + st * 1024]);
        };
        if (swiglu_) {
          result(y, 2 * q);
          result(u, 2 * q + 1);
          emit_silu_mul(y, u);
        } else {
          result(y, q);
          if (spec_.epilogue == Epilogue::ResidualAdd) {
            if (last) vmovups(Zmm(2) | k3 | T_z, ptr[r9 + q * 64]);
            else vmovups(Zmm(2), ptr[r9 + q * 64]);
            vaddps(y, y, Zmm(2));
          }
        }
        if (last) vmovups(ptr[r13 + q * 64] | k3, y);
        else vmovups(ptr[r13 + q * 64], y);
      }
      add(r13, ptr[rsp + kLdy]);
      add(r9, ptr[rsp + kLdr]);
    });
    mov(r13, ptr[rsp + kSpill]);
    (void)ns;
  }
};

}  // namespace

std::unique_ptr<Emitter> make_q4k_amx_emitter(const KernelSpec& spec) { return std::make_unique<Q4KAmx>(spec); }

}  // namespace ckjit::jit
