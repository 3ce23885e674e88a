// Matmul with AMX-INT8 (emitted for CPUs that grant AMX tile data): GEMM, GEMV and fused Gate-Up
// SwiGLU on tiles of 16 activation rows x 16 weight columns, for Q4_K, Q5_K, Q6_K (x Q8_K) and
// Q8_0 (x Q8_0). Q5_K/Q6_K/Q8_0 panels are already in VNNI order and are loaded as B tiles
// directly; Q8_0 uses tdpbssd (both signed), the K-quants tdpbsud. The integer sums and float
// orders are those of the AVX-512 kernels of each type. Q4_K in detail:
// Per 32-element sub-block: the masked nibbles of each weight panel (0x0F, or 0xF0 = 16·q as in
// the AVX-512 kernel) are written as a B tile (8 quad rows x 64 bytes: the panel layout is already
// VNNI order), the 16 activation rows' 32 quants are loaded as the A tile straight from the Q8_K
// rows (stride ldx), and tdpbsud (signed A x unsigned B) gives the 16x16 int32 sums T. T is
// scaled by 16·sc / sc per column (vpmulld) into S in memory; then, per super-block and row,
// exactly the AVX-512 kernel's sums and float order (S >> 4, M by vpdpwssd,
// acc = fma(float(S), f16(d)·D, acc), accm = fma(float(M), f16(dmin)·D, accm), y = acc − accm).
// Row tails use a tile configuration with fewer rows, set at run time.
#include "jit/x86/amx_tile_config.h"
#include "jit/x86/matmul_avx512_frame.h"
#include "jit/packed_weights.h"

namespace ckjit::jit {
namespace {

template <TensorType kType>
class AmxMatmul : public MatmulAvx512Frame {
 public:
  explicit AmxMatmul(const KernelSpec& s)
      : MatmulAvx512Frame(s, block_bytes(), kType == TensorType::Q8_0 ? quant::QK8_0 : quant::QK_K, has_min()),
        cfg_(amx_tile_config(s)) {
    generate_amx();
  }

 private:
  static constexpr bool has_min() { return kType == TensorType::Q4_K || kType == TensorType::Q5_K; }
  static int64_t block_bytes() {
    switch (kType) {
      case TensorType::Q4_K: return Q4KPanelLayout{16}.bytes();
      case TensorType::Q5_K: return Q5KPanelLayout{16}.bytes();
      case TensorType::Q6_K: return Q6KPanelLayout{16}.bytes();
      default: return Q80PanelLayout{16}.bytes();
    }
  }
  // Tile products per weight block, elements per product, and where product u's quads start.
  static constexpr int units() { return kType == TensorType::Q6_K ? 16 : kType == TensorType::Q8_0 ? 1 : 8; }
  static constexpr int kdim() { return kType == TensorType::Q6_K ? 16 : 32; }
  int act_block_bytes() const override {
    return kType == TensorType::Q8_0 ? int(sizeof(quant::BlockQ8_0)) : kQ8KBytes;
  }
  int act_quants_offset() const { return kType == TensorType::Q8_0 ? 2 : kQ8KQs; }
  int64_t quad_offset(int u, int j) const {
    switch (kType) {
      case TensorType::Q4_K: return Q4KPanelLayout{16}.quad(u, j);
      case TensorType::Q5_K: return Q5KPanelLayout{16}.quad(u, j);
      case TensorType::Q6_K: return Q6KPanelLayout{16}.u(4 * u + j);
      default: return Q80PanelLayout{16}.qs(j);
    }
  }
  // Loads the per-column int32 scale of product u into z (nothing for Q8_0).
  void load_unit_scale(const Zmm& z, int st, int u) {
    if constexpr (kType == TensorType::Q4_K) {
      vpmovzxbd(z, ptr[stream(st, Q4KPanelLayout{16}.sc(u))]);
      if (u % 2 == 0) vpslld(z, z, 4);
    } else if constexpr (kType == TensorType::Q5_K) {
      vpmovzxbd(z, ptr[stream(st, Q5KPanelLayout{16}.sc(u))]);
    } else if constexpr (kType == TensorType::Q6_K) {
      vpmovsxbw(z, ptr[stream(st, Q6KPanelLayout{16}.scp(u / 2))]);
      if (u % 2 == 0) vpslld(z, z, 16);
      vpsrad(z, z, 16);
    }
  }
  void emit_load_act_scale(const Zmm& z, int m) override {
    if constexpr (kType == TensorType::Q8_0) {
      vpbroadcastw(Xbyak::Ymm(z.getIdx()), ptr[xrow(m, 0)]);
      vcvtph2ps(z, Xbyak::Ymm(z.getIdx()));
    } else {
      vbroadcastss(z, ptr[xrow(m, 0)]);
    }
  }
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
    push_callee_saved();
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
    emit_panel_setup();
    emit_group_loop();
    tilerelease();
    vzeroupper();
    add(rsp, kFrame);
    pop_callee_saved();
    ret();
    emit_constants();
  }

  int off_ygroup() const override { return kYGroup; }
  int off_rgroup() const override { return kRGroup; }

  // Rows loop of one column group: bodies of up to 16 rows.
  void emit_mloop(int np) override {
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
    for (int u = 0; u < units(); ++u) {
      mov(edx, 64);
      for (int st = 0; st < ns; ++st) {
        const Xbyak::Tmm B(AmxTileConfig::kBTile0 + st);
        if constexpr (kType == TensorType::Q4_K) {
          const Zmm& mask = u % 2 == 0 ? zLo : zHi;
          for (int j = 0; j < 8; ++j) {
            vpandd(Zmm(0), mask, ptr[stream(st, quad_offset(u, j))]);
            vmovdqu32(ptr[rsp + kB + st * 512 + j * 64], Zmm(0));
          }
          tileloadd(B, ptr[rsp + rdx + kB + st * 512]);
        } else {
          tileloadd(B, ptr[stream(st, quad_offset(u, 0)) + rdx]);
        }
      }
      tileloadd(Xbyak::Tmm(AmxTileConfig::kATile), ptr[r9 + r11 + act_quants_offset() + kdim() * u]);
      for (int st = 0; st < ns; ++st) {
        tilezero(Xbyak::Tmm(st));
        if constexpr (kType == TensorType::Q8_0)
          tdpbssd(Xbyak::Tmm(st), Xbyak::Tmm(AmxTileConfig::kATile), Xbyak::Tmm(AmxTileConfig::kBTile0 + st));
        else
          tdpbsud(Xbyak::Tmm(st), Xbyak::Tmm(AmxTileConfig::kATile), Xbyak::Tmm(AmxTileConfig::kBTile0 + st));
        tilestored(ptr[rsp + rdx + kC + st * 1024], Xbyak::Tmm(st));
      }
      for (int st = 0; st < ns; ++st) load_unit_scale(Zmm(1 + st), st, u);
      row_loop([&] {
        for (int st = 0; st < ns; ++st) {
          vmovdqu32(Zmm(3), ptr[rsp + rdx + kC + st * 1024]);
          if constexpr (kType != TensorType::Q8_0) vpmulld(Zmm(3), Zmm(3), Zmm(1 + st));
          vpaddd(Zmm(3), Zmm(3), ptr[rsp + rdx + kS + st * 1024]);
          vmovdqu32(ptr[rsp + rdx + kS + st * 1024], Zmm(3));
        }
      });
    }
    // Per row: the correction terms (Q4_K/Q5_K mins, Q6_K -32 bias) and the float update.
    vpbroadcastd(zD, cst_scalar(2));
    for (int st = 0; st < ns; ++st) {
      for (int s = 0; s < 8; ++s) {
        const Zmm z(8 + 8 * st + s);
        if constexpr (has_min()) {
          const int64_t mn = kType == TensorType::Q4_K ? Q4KPanelLayout{16}.mn(s) : Q5KPanelLayout{16}.mn(s);
          vpmovzxbd(z, ptr[stream(st, mn)]);
          vpmulld(z, z, zD);
        } else if constexpr (kType == TensorType::Q6_K) {
          vpmovsxbw(z, ptr[stream(st, Q6KPanelLayout{16}.scp(s))]);
        }
      }
      int64_t d_off = 0, dmin_off = 0;
      if constexpr (kType == TensorType::Q4_K) d_off = Q4KPanelLayout{16}.d(), dmin_off = Q4KPanelLayout{16}.dmin();
      if constexpr (kType == TensorType::Q5_K) d_off = Q5KPanelLayout{16}.d(), dmin_off = Q5KPanelLayout{16}.dmin();
      if constexpr (kType == TensorType::Q6_K) d_off = Q6KPanelLayout{16}.d();
      if constexpr (kType == TensorType::Q8_0) d_off = Q80PanelLayout{16}.d();
      vcvtph2ps(Zmm(4 + st), ptr[stream(st, d_off)]);
      if (has_min()) vcvtph2ps(Zmm(6 + st), ptr[stream(st, dmin_off)]);
    }
    mov(ptr[rsp + kSpill], r13);
    mov(r13, r9);
    row_loop([&] {
      emit_row_update(ns);  // r13 = this row's activation block; rows advance by ldx
      add(r13, r11);
    });
    mov(r13, ptr[rsp + kSpill]);
    vpxord(zA, zA, zA);
    add(rsi, int(block_bytes_));
    add(r8, int(block_bytes_));
    add(r9, act_block_bytes());
    dec(ecx);
    jnz(sb, T_NEAR);
    emit_rows_epilogue(np, ns);
  }

  // One row (activation block at r13, stack row offset rdx) of the per-block update.
  void emit_row_update(int ns) {
    if constexpr (kType == TensorType::Q8_0) {
      vpbroadcastw(Xbyak::Ymm(zD.getIdx()), ptr[r13]);
      vcvtph2ps(zD, Xbyak::Ymm(zD.getIdx()));
    } else {
      vbroadcastss(zD, ptr[r13]);
    }
    for (int st = 0; st < ns; ++st) {
      vmovdqu32(Zmm(0), ptr[rsp + rdx + kS + st * 1024]);
      if constexpr (kType == TensorType::Q4_K) vpsrad(Zmm(0), Zmm(0), 4);
      if constexpr (kType == TensorType::Q6_K) {
        vpxord(Zmm(1), Zmm(1), Zmm(1));
        for (int i = 0; i < 8; ++i) vpdpwssd(Zmm(1), Zmm(8 + 8 * st + i), ptr_b[r13 + kQ8KBsums + 4 * i]);
        vpslld(Zmm(1), Zmm(1), 5);
        vpsubd(Zmm(0), Zmm(0), Zmm(1));
      }
      vcvtdq2ps(Zmm(0), Zmm(0));
      vmulps(zF, Zmm(4 + st), zD);
      vmovups(zA, ptr[rsp + rdx + kAcc + st * 1024]);
      vfmadd231ps(zA, Zmm(0), zF);
      vmovups(ptr[rsp + rdx + kAcc + st * 1024], zA);
      if constexpr (has_min()) {
        vpxord(Zmm(1), Zmm(1), Zmm(1));
        for (int s = 0; s < 8; ++s) vpdpwssd(Zmm(1), Zmm(8 + 8 * st + s), ptr_b[r13 + kQ8KBsums + 4 * s]);
        vcvtdq2ps(Zmm(1), Zmm(1));
        vmulps(zF, Zmm(6 + st), zD);
        vmovups(zA, ptr[rsp + rdx + kAccm + st * 1024]);
        vfmadd231ps(zA, Zmm(1), zF);
        vmovups(ptr[rsp + rdx + kAccm + st * 1024], zA);
      }
    }
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

std::unique_ptr<Emitter> make_q4k_amx_emitter(const KernelSpec& spec) { return std::make_unique<AmxMatmul<TensorType::Q4_K>>(spec); }
std::unique_ptr<Emitter> make_q5k_amx_emitter(const KernelSpec& spec) { return std::make_unique<AmxMatmul<TensorType::Q5_K>>(spec); }
std::unique_ptr<Emitter> make_q6k_amx_emitter(const KernelSpec& spec) { return std::make_unique<AmxMatmul<TensorType::Q6_K>>(spec); }
std::unique_ptr<Emitter> make_q80_amx_emitter(const KernelSpec& spec) { return std::make_unique<AmxMatmul<TensorType::Q8_0>>(spec); }

}  // namespace ckjit::jit
