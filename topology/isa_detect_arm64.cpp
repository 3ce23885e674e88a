// AArch64's detect_isa (topology/isa.h): the HWCAPs Linux sets for what the CPU has and the kernel
// supports, and the SVE vector length this process runs with (it can differ per process).
#include <asm/hwcap.h>
#include <sys/auxv.h>
#include <sys/prctl.h>

#include "topology/isa.h"

namespace ckjit::topo {

Isa detect_isa() {
  const unsigned long hw = getauxval(AT_HWCAP), hw2 = getauxval(AT_HWCAP2);
  Isa isa;
  isa.asimd = (hw & HWCAP_ASIMD) != 0;
  isa.asimddp = (hw & HWCAP_ASIMDDP) != 0;
  isa.sve = (hw & HWCAP_SVE) != 0;
  isa.sve2 = (hw2 & HWCAP2_SVE2) != 0;
  isa.i8mm = (hw2 & HWCAP2_I8MM) != 0;
  isa.arm_bf16 = (hw2 & HWCAP2_BF16) != 0;
  if (isa.sve) {
    const int vl = prctl(PR_SVE_GET_VL);
    isa.sve_bits = vl > 0 ? (vl & PR_SVE_VL_LEN_MASK) * 8 : 0;
  }
  return isa;
}

}  // namespace ckjit::topo
