#pragma once
// Which kernel ISA paths this process may execute (CPUID, OS state and CKJIT_MAX_ISA).
#include <vector>

#include "jit/kernel_spec.h"
#include "topology/isa.h"

namespace ckjit::jit {

// What this process may run: topo::process_isa() (CPUID and CKJIT_MAX_ISA, resolved once). A load
// with a caller's cap on top uses jit::IsaTarget (jit/isa_target.h).
topo::Isa runtime_isa();
// Whether kernels of `path` run on `isa`; enc matters for IsaPath::AvxVnni only (VEX needs
// AVX-VNNI, the EVEX test variant AVX512-VNNI + AVX512VL).
bool isa_runs(IsaPath path, const topo::Isa& isa, VnniEncoding enc = VnniEncoding::Vex);
// Whether a kernel of `spec` runs on `isa`: its path, and for the AMX op=dense kernel AMX-BF16 and
// AVX512-BF16 too (its input rows are converted with vcvtneps2bf16).
bool kernel_runs(const KernelSpec& spec, const topo::Isa& isa);
// The paths the ISA runs, best first: amx, avx512, avxvnni (VEX), avx2. Throws ckjit::Error below
// AVX2 + FMA + F16C. Never lists the EVEX AvxVnni variant: where it runs, avx512 runs too and is faster.
std::vector<IsaPath> isa_paths(const topo::Isa& isa);

}  // namespace ckjit::jit
