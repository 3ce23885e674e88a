#include "jit/planner/probe_loops.h"

#include <xbyak/xbyak.h>

#include "runtime/error.h"

namespace ckjit::planner {
namespace {

constexpr int kUnroll = 4;

int max_accs(DotProbe k) {
  switch (k) {
    case DotProbe::vnni_zmm:
    case DotProbe::bf16_zmm:
    case DotProbe::fma_zmm: return 30;   // zmm30/31 hold the operands
    case DotProbe::vnni_ymm:
    case DotProbe::fma_ymm: return 14;   // VEX: ymm14/15 hold the operands
    case DotProbe::avx2_int8: return 6;  // each chain also needs a product register; ymm13-15 operands
  }
  return 0;
}

double macs_per_op(DotProbe k) {
  switch (k) {
    case DotProbe::vnni_zmm: return 64;
    case DotProbe::vnni_ymm:
    case DotProbe::avx2_int8:
    case DotProbe::bf16_zmm: return 32;
    case DotProbe::fma_zmm: return 16;
    case DotProbe::fma_ymm: return 8;
  }
  return 0;
}

}  // namespace

const char* dot_probe_name(DotProbe p) {
  switch (p) {
    case DotProbe::vnni_zmm: return "int8 vpdpbusd zmm";
    case DotProbe::vnni_ymm: return "int8 vpdpbusd ymm (AVX-VNNI)";
    case DotProbe::avx2_int8: return "int8 vpmaddubsw+vpmaddwd ymm";
    case DotProbe::bf16_zmm: return "bf16 vdpbf16ps zmm";
    case DotProbe::fma_zmm: return "f32 vfmadd zmm";
    case DotProbe::fma_ymm: return "f32 vfmadd ymm";
  }
  return "?";
}

// void loop(int64_t iters)
struct DotLoop::Code : Xbyak::CodeGenerator {
  Code(DotProbe kind, int accs) : Xbyak::CodeGenerator(8192, Xbyak::DontSetProtectRWE) {
    using namespace Xbyak;
    const bool zmm = kind == DotProbe::vnni_zmm || kind == DotProbe::bf16_zmm || kind == DotProbe::fma_zmm;
    // Operand values: u8 1 x s8 1, bf16 1.0, f32 1.0 (normal numbers all the way).
    const uint32_t pattern = kind == DotProbe::bf16_zmm ? 0x3f803f80u
                             : (kind == DotProbe::fma_zmm || kind == DotProbe::fma_ymm) ? 0x3f800000u
                                                                                         : 0x01010101u;
    mov(eax, pattern);
    if (zmm) {
      vpbroadcastd(zmm30, eax);
      vmovdqa32(zmm31, zmm30);
      for (int i = 0; i < accs; ++i) vpxord(Zmm(i), Zmm(i), Zmm(i));
    } else {
      vmovd(xmm15, eax);
      vpbroadcastd(ymm15, xmm15);
      vmovdqa(ymm14, ymm15);
      mov(eax, 0x00010001);  // int16 ones for vpmaddwd
      vmovd(xmm13, eax);
      vpbroadcastd(ymm13, xmm13);
      for (int i = 0; i < accs; ++i) vpxor(Ymm(i), Ymm(i), Ymm(i));
    }
    Label loop, done;
    test(rdi, rdi);
    jle(done, T_NEAR);
    L(loop);
    for (int u = 0; u < kUnroll; ++u)
      for (int i = 0; i < accs; ++i) {
        switch (kind) {
          case DotProbe::vnni_zmm: vpdpbusd(Zmm(i), zmm30, zmm31); break;
          case DotProbe::bf16_zmm: vdpbf16ps(Zmm(i), zmm30, zmm31); break;
          case DotProbe::fma_zmm: vfmadd231ps(Zmm(i), zmm30, zmm31); break;
          case DotProbe::vnni_ymm: vpdpbusd(Ymm(i), ymm14, ymm15, VexEncoding); break;
          case DotProbe::fma_ymm: vfmadd231ps(Ymm(i), ymm14, ymm15); break;
          case DotProbe::avx2_int8: {
            const Ymm t(6 + i);
            vpmaddubsw(t, ymm14, ymm15);
            vpmaddwd(t, t, ymm13);
            vpaddd(Ymm(i), Ymm(i), t);
            break;
          }
        }
      }
    dec(rdi);
    jnz(loop);
    L(done);
    vzeroupper();
    ret();
    setProtectModeRE();
  }
};

DotLoop::DotLoop(DotProbe kind, int accs) : accs_(accs), macs_per_iter_(macs_per_op(kind) * kUnroll * accs) {
  if (accs < 1 || accs > max_accs(kind))
    throw Error(std::string("peak probe: ") + dot_probe_name(kind) + " takes 1.." + std::to_string(max_accs(kind)) +
                " accumulators, not " + std::to_string(accs));
  code_ = std::make_unique<Code>(kind, accs);
}
DotLoop::~DotLoop() = default;

double DotLoop::run(int64_t iters) const {
  code_->getCode<void (*)(int64_t)>()(iters);
  return double(iters) * macs_per_iter_;
}

// void read(const void* p, size_t part): `streams` parts of `part` bytes each, back to back.
// Lines per stream per iteration keep >= 8 loads in flight whatever the stream count.
struct ReadLoop::Code : Xbyak::CodeGenerator {
  static constexpr Xbyak::Operand::Code kPtr[6] = {Xbyak::Operand::RDI, Xbyak::Operand::R8, Xbyak::Operand::R9,
                                                   Xbyak::Operand::R10, Xbyak::Operand::R11, Xbyak::Operand::RDX};
  Code(int streams, bool avx512) : Xbyak::CodeGenerator(8192, Xbyak::DontSetProtectRWE) {
    using namespace Xbyak;
    const int lines = streams >= 8 ? 1 : 8 / streams;
    for (int s = 1; s < streams; ++s) lea(Reg64(kPtr[s]), ptr[Reg64(kPtr[s - 1]) + rsi]);
    for (int i = 0; i < 8; ++i) avx512 ? vpxord(Zmm(i), Zmm(i), Zmm(i)) : vpxor(Ymm(i), Ymm(i), Ymm(i));
    xor_(ecx, ecx);
    Label loop, done;
    test(rsi, rsi);
    jz(done, T_NEAR);
    L(loop);
    int a = 0;
    for (int l = 0; l < lines; ++l)
      for (int s = 0; s < streams; ++s, ++a) {
        const Reg64 base(kPtr[s]);
        if (avx512) {
          vpaddd(Zmm(a % 8), Zmm(a % 8), ptr[base + rcx + l * 64]);
        } else {
          vpaddd(Ymm(a % 8), Ymm(a % 8), ptr[base + rcx + l * 64]);
          vpaddd(Ymm((a + 4) % 8), Ymm((a + 4) % 8), ptr[base + rcx + l * 64 + 32]);
        }
      }
    add(rcx, lines * 64);
    cmp(rcx, rsi);
    jb(loop);
    L(done);
    // The dword sum of everything read, so a test can tell the whole range was read.
    if (avx512) {
      for (int i = 1; i < 8; ++i) vpaddd(zmm0, zmm0, Zmm(i));
      vextracti64x4(ymm1, zmm0, 1);
      vpaddd(ymm0, ymm0, ymm1);
    } else {
      for (int i = 1; i < 8; ++i) vpaddd(ymm0, ymm0, Ymm(i));
    }
    vextracti128(xmm1, ymm0, 1);
    vpaddd(xmm0, xmm0, xmm1);
    vpshufd(xmm1, xmm0, 0x4e);
    vpaddd(xmm0, xmm0, xmm1);
    vpshufd(xmm1, xmm0, 0xb1);
    vpaddd(xmm0, xmm0, xmm1);
    vmovd(eax, xmm0);
    vzeroupper();
    ret();
    setProtectModeRE();
  }
};

ReadLoop::ReadLoop(int streams, bool avx512) : streams_(streams) {
  if (streams < 1 || streams > 6) throw Error("peak probe: read loop takes 1..6 streams, not " + std::to_string(streams));
  code_ = std::make_unique<Code>(streams, avx512);
}
ReadLoop::~ReadLoop() = default;

uint32_t ReadLoop::run(const void* p, std::size_t bytes) const {
  const std::size_t unit = std::size_t(512) * std::size_t(streams_);
  if (bytes % unit) throw Error("peak probe: read size must be a multiple of " + std::to_string(unit) + " bytes");
  return code_->getCode<uint32_t (*)(const void*, std::size_t)>()(p, bytes / std::size_t(streams_));
}

}  // namespace ckjit::planner
