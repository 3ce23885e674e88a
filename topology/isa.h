#pragma once
// Instruction-set features the kernels may use, each already checked for OS support (XCR0),
// and AMX only when the kernel granted tile state to this process. On AArch64 the Linux HWCAPs
// (which the kernel sets only for what it supports) give Advanced SIMD and its extensions.
#include <string>

namespace ckjit::topo {

struct Isa {
  bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false, avx_vnni = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;  // CPU reports them
  bool amx_usable = false;                                     // ... and the OS granted tile data
  // AArch64: Advanced SIMD, its int8 dot product (sdot), int8 matrix multiply (smmla), SVE, SVE2, BF16.
  bool asimd = false, asimddp = false, i8mm = false, sve = false, sve2 = false, arm_bf16 = false;
  int sve_bits = 0;  // the SVE vector length this process runs with (0: no SVE)

  // Space-separated list of present features, e.g. "avx2 fma f16c avx512f ...".
  std::string to_string() const;
};

// x86 (isa_detect_x86.cpp): CPUID + XGETBV (via Xbyak's Cpu) and, for AMX,
// arch_prctl(ARCH_REQ_XCOMP_PERM). AArch64 (isa_detect_arm64.cpp): getauxval(AT_HWCAP, AT_HWCAP2)
// and prctl(PR_SVE_GET_VL). The build compiles the one for its target.
Isa detect_isa();

// Feature names as Linux spells them in /proc/cpuinfo "flags" (x86) or "Features" (AArch64), for cross-checks.
struct IsaFromProc {
  bool found = false;
  Isa isa;
};
IsaFromProc parse_proc_cpuinfo_flags(const std::string& cpuinfo_text);

// What this process may use: detect_isa() capped by CKJIT_MAX_ISA, resolved once per process. The
// one place that reads CPUID and the environment for the ISA; everything else is handed an Isa
// (jit/isa_target.h adds a caller's cap on top).
const Isa& process_isa();
const Isa& cpu_isa();  // detect_isa(), once per process (before any cap)

// Applies CKJIT_MAX_ISA (x86: avx2 | avxvnni | avx512 | amx; AArch64: neon | dotprod | sve) to a
// detected Isa: clears what lies above the cap, so an AVX-512 machine can run and test its AVX2
// paths. avxvnni keeps AVX-VNNI and drops AVX-512 (on a CPU without AVX-VNNI that leaves AVX2).
// neon keeps Advanced SIMD only; dotprod adds sdot and smmla; sve keeps all. A cap of the other
// architecture's family caps nothing there. Unknown values raise ckjit::Error.
Isa cap_isa(Isa isa, const std::string& max_isa);

}  // namespace ckjit::topo
