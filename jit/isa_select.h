#pragma once
// Which kernel ISA paths this process may execute (CPUID, OS state and CKJIT_MAX_ISA).
#include "jit/kernel_spec.h"
#include "topology/isa.h"

namespace ckjit::jit {

// detect_isa() capped by the CKJIT_MAX_ISA environment variable.
topo::Isa runtime_isa();
bool isa_runs(IsaPath path, const topo::Isa& isa);
// The widest path the ISA runs: amx > avx512 > avx2. Throws ckjit::Error below AVX2.
IsaPath best_isa_path(const topo::Isa& isa);

}  // namespace ckjit::jit
