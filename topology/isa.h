#pragma once
// Instruction-set features the kernels may use, each already checked for OS support (XCR0),
// and AMX only when the kernel granted tile state to this process.
#include <string>

namespace ckjit::topo {

struct Isa {
  bool sse42 = false, avx = false, avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false;
  bool avx512vnni = false, avx512bf16 = false, avx_vnni = false;
  bool amx_tile = false, amx_int8 = false, amx_bf16 = false;  // CPU reports them
  bool amx_usable = false;                                     // ... and the OS granted tile data

  // Space-separated list of present features, e.g. "avx2 fma f16c avx512f ...".
  std::string to_string() const;
};

// CPUID + XGETBV (via Xbyak's Cpu) and, for AMX, arch_prctl(ARCH_REQ_XCOMP_PERM).
Isa detect_isa();

// Feature names as Linux spells them in /proc/cpuinfo "flags" (for cross-checks).
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

// Applies CKJIT_MAX_ISA (avx2 | avxvnni | avx512 | amx) to a detected Isa: clears what lies above
// the cap, so an AVX-512 machine can run and test its AVX2 paths. avxvnni keeps AVX-VNNI and drops
// AVX-512 (on a CPU without AVX-VNNI that leaves AVX2). Unknown values raise ckjit::Error.
Isa cap_isa(Isa isa, const std::string& max_isa);

}  // namespace ckjit::topo
