#pragma once
// The instruction set one model load may use, resolved once: what the CPU and the OS offer, capped
// by CKJIT_MAX_ISA (topo::process_isa()) and then by the caller's own cap (the C API's max_isa).
// The load hands it to everything that chooses code — the planner (through the Machine it plans
// for), the Linear ops' kernel selection, the vision tower, the tuned profile's key — so a capped
// load plans for the kernels it will actually run.
#include <string>
#include <vector>

#include "jit/isa_select.h"
#include "topology/machine.h"

namespace ckjit::jit {

struct IsaTarget {
  topo::Isa isa;        // every cap applied
  std::string cap;      // the caller's cap ("" for none)

  // process_isa() capped by `caller_cap` ("", "avx2", "avxvnni", "avx512", "amx"); Error
  // (invalid_argument) for another value.
  static IsaTarget resolve(const std::string& caller_cap = "");
  std::vector<IsaPath> paths() const { return isa_paths(isa); }  // best first
  IsaPath best() const { return paths().front(); }
  // The machine as this target sees it: its isa replaced, so plans and profile keys follow the cap.
  topo::Machine applied_to(topo::Machine m) const;
};

}  // namespace ckjit::jit
