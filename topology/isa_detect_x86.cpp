// x86's detect_isa (topology/isa.h): CPUID and XGETBV through Xbyak's Cpu, AMX tile state asked of Linux.
#include <sys/syscall.h>
#include <unistd.h>

#include <xbyak/xbyak_util.h>

#include "topology/isa.h"

namespace ckjit::topo {
namespace {

// Linux asks a process to request AMX tile data state before using it (since 5.16).
constexpr int kArchGetXcompPerm = 0x1022;
constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;

bool request_amx_permission() {
  if (syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) != 0) return false;
  unsigned long bitmask = 0;
  if (syscall(SYS_arch_prctl, kArchGetXcompPerm, &bitmask) != 0) return false;
  return (bitmask & (1UL << kXfeatureXtiledata)) != 0;
}

}  // namespace

Isa detect_isa() {
  using C = Xbyak::util::Cpu;
  C cpu;  // Xbyak clears AVX/AVX-512 bits when XCR0 says the OS does not save that state.
  Isa isa;
  isa.sse42 = cpu.has(C::tSSE42);
  isa.avx = cpu.has(C::tAVX);
  isa.avx2 = cpu.has(C::tAVX2);
  isa.fma = cpu.has(C::tFMA);
  isa.f16c = cpu.has(C::tF16C);
  isa.avx512f = cpu.has(C::tAVX512F);
  isa.avx512bw = cpu.has(C::tAVX512BW);
  isa.avx512vl = cpu.has(C::tAVX512VL);
  isa.avx512dq = cpu.has(C::tAVX512DQ);
  isa.avx512vnni = cpu.has(C::tAVX512_VNNI);
  isa.avx512bf16 = cpu.has(C::tAVX512_BF16);
  isa.avx_vnni = cpu.has(C::tAVX_VNNI);
  isa.amx_tile = cpu.has(C::tAMX_TILE);
  isa.amx_int8 = cpu.has(C::tAMX_INT8);
  isa.amx_bf16 = cpu.has(C::tAMX_BF16);
  isa.amx_usable = isa.amx_tile && isa.amx_int8 && request_amx_permission();
  return isa;
}

}  // namespace ckjit::topo
