#include "jit/isa_select.h"


#include "runtime/error.h"

namespace ckjit::jit {

topo::Isa runtime_isa() { return topo::process_isa(); }

bool isa_runs(IsaPath path, const topo::Isa& isa, VnniEncoding enc) {
  switch (path) {
    case IsaPath::Avx2: return isa.avx2 && isa.fma && isa.f16c;
    case IsaPath::AvxVnni:
      return isa_runs(IsaPath::Avx2, isa) &&
             (enc == VnniEncoding::Vex ? isa.avx_vnni : isa.avx512vl && isa.avx512vnni);
    case IsaPath::Avx512: return isa.avx512f && isa.avx512bw && isa.avx512vl && isa.avx512vnni;
    case IsaPath::Amx: return isa.amx_int8 && isa.amx_usable && isa_runs(IsaPath::Avx512, isa);
  }
  return false;
}

bool kernel_runs(const KernelSpec& spec, const topo::Isa& isa) {
  if (!isa_runs(spec.isa, isa, spec.enc)) return false;
  if (spec.isa == IsaPath::Amx && spec.op == Op::Dense) return isa.amx_bf16 && isa.avx512bf16;
  return true;
}

std::vector<IsaPath> isa_paths(const topo::Isa& isa) {
  std::vector<IsaPath> out;
  for (IsaPath p : {IsaPath::Amx, IsaPath::Avx512, IsaPath::AvxVnni, IsaPath::Avx2})
    if (isa_runs(p, isa)) out.push_back(p);
  if (out.empty() || out.back() != IsaPath::Avx2) throw Error("ckjit needs at least AVX2 + FMA + F16C");
  return out;
}

}  // namespace ckjit::jit
