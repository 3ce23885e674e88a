#include "topology/isa.h"

#include <cstdlib>
#include <sstream>

#include "runtime/error.h"

namespace ckjit::topo {

std::string Isa::to_string() const {
  std::ostringstream s;
  const std::pair<bool, const char*> flags[] = {
      {sse42, "sse4.2"},       {avx, "avx"},           {avx2, "avx2"},         {fma, "fma"},
      {f16c, "f16c"},          {avx512f, "avx512f"},   {avx512bw, "avx512bw"}, {avx512vl, "avx512vl"},
      {avx512dq, "avx512dq"},  {avx512vnni, "avx512vnni"}, {avx512bf16, "avx512bf16"},
      {avx_vnni, "avx-vnni"},  {amx_tile, "amx-tile"}, {amx_int8, "amx-int8"}, {amx_bf16, "amx-bf16"},
      {asimd, "asimd"},        {asimddp, "asimddp"},   {i8mm, "i8mm"},         {sve, "sve"},
      {sve2, "sve2"},          {arm_bf16, "bf16"}};
  bool first = true;
  for (auto [on, name] : flags) {
    if (!on) continue;
    s << (first ? "" : " ") << name;
    first = false;
  }
  if (sve_bits > 0) s << " sve-vl=" << sve_bits;
  return s.str();
}

IsaFromProc parse_proc_cpuinfo_flags(const std::string& text) {
  IsaFromProc out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind("flags", 0) != 0 && line.rfind("Features", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    out.found = true;
    std::istringstream words(line.substr(colon + 1));
    std::string w;
    Isa& i = out.isa;
    while (words >> w) {
      if (w == "sse4_2") i.sse42 = true;
      else if (w == "avx") i.avx = true;
      else if (w == "avx2") i.avx2 = true;
      else if (w == "fma") i.fma = true;
      else if (w == "f16c") i.f16c = true;
      else if (w == "avx512f") i.avx512f = true;
      else if (w == "avx512bw") i.avx512bw = true;
      else if (w == "avx512vl") i.avx512vl = true;
      else if (w == "avx512dq") i.avx512dq = true;
      else if (w == "avx512_vnni") i.avx512vnni = true;
      else if (w == "avx512_bf16") i.avx512bf16 = true;
      else if (w == "avx_vnni") i.avx_vnni = true;
      else if (w == "amx_tile") i.amx_tile = true;
      else if (w == "amx_int8") i.amx_int8 = true;
      else if (w == "amx_bf16") i.amx_bf16 = true;
      else if (w == "asimd") i.asimd = true;
      else if (w == "asimddp") i.asimddp = true;
      else if (w == "i8mm") i.i8mm = true;
      else if (w == "sve") i.sve = true;
      else if (w == "sve2") i.sve2 = true;
      else if (w == "bf16") i.arm_bf16 = true;
    }
    break;  // the first processor's flags describe all of them
  }
  return out;
}

// Once: under a hypervisor each CPUID traps (14 ms of a load, measured), and a cap that changed
// mid-process would leave kernels chosen for two different ISAs.
const Isa& cpu_isa() {
  static const Isa detected = detect_isa();
  return detected;
}

const Isa& process_isa() {
  static const Isa resolved = [] {
    const char* cap = std::getenv("CKJIT_MAX_ISA");
    return cap_isa(cpu_isa(), cap ? cap : "");
  }();
  return resolved;
}

Isa cap_isa(Isa isa, const std::string& max_isa) {
  if (max_isa.empty() || max_isa == "amx" || max_isa == "sve") return isa;
  if (max_isa == "neon" || max_isa == "dotprod") {
    isa.sve = isa.sve2 = isa.arm_bf16 = false;
    isa.sve_bits = 0;
    if (max_isa == "neon") isa.asimddp = isa.i8mm = false;
    return isa;
  }
  if (max_isa != "avx512" && max_isa != "avxvnni" && max_isa != "avx2")
    throw Error("CKJIT_MAX_ISA must be avx2, avxvnni, avx512 or amx (x86), or neon, dotprod or sve (AArch64), got '" + max_isa + "'");
  isa.amx_tile = isa.amx_int8 = isa.amx_bf16 = isa.amx_usable = false;
  if (max_isa == "avx512") return isa;
  // avxvnni and avx2 drop every AVX-512 feature (so AVX512-VNNI+VL, which would run the EVEX
  // form of the AVX-VNNI kernels, is gone too); avx2 drops AVX-VNNI as well.
  isa.avx512f = isa.avx512bw = isa.avx512vl = isa.avx512dq = false;
  isa.avx512vnni = isa.avx512bf16 = false;
  if (max_isa == "avx2") isa.avx_vnni = false;
  return isa;
}

}  // namespace ckjit::topo
