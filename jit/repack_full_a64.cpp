// AArch64: no full-panel packer yet (a NEON copy of repack_full_avx2.cpp's transposes would go
// here); the row walk packs every panel, the same bytes.
#include "jit/repack_full.h"

namespace ckjit::jit::detail {

const FullPackers* full_packers() { return nullptr; }

}  // namespace ckjit::jit::detail
