#include "jit/isa_target.h"

#include "runtime/error.h"

namespace ckjit::jit {

IsaTarget IsaTarget::resolve(const std::string& caller_cap) {
  IsaTarget t;
  t.cap = caller_cap;
  try {
    t.isa = topo::cap_isa(topo::process_isa(), caller_cap);
  } catch (const Error&) {
    throw Error("$max_isa must be avx2, avxvnni, avx512 or amx, got '" + caller_cap + "'", ErrorKind::invalid_argument);
  }
  isa_paths(t.isa);  // Error below AVX2 + FMA + F16C, before anything is loaded
  return t;
}

topo::Machine IsaTarget::applied_to(topo::Machine m) const {
  m.isa = isa;
  return m;
}

}  // namespace ckjit::jit
