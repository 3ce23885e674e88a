#pragma once
// The full-panel packers of the load-time repacks (repack_panels.h's pack_full): all `panel` rows of
// one block at once, every byte of the panel super-block written — the bytes the row walk of
// repack_q4k / q6k / q80.cpp writes, with whole-vector stores. One set per instruction set, in a
// file named for it; full_packers() is the set this process may run, or nullptr where there is
// none (then the row walk packs every panel).
#include <cstdint>

#include "jit/packed_weights.h"
#include "runtime/quants/quant_internal.h"

namespace ckjit::jit::detail {

struct FullPackers {
  const char* name;
  void (*q4_K)(const Q4KPanelLayout& L, const quant::BlockQ4_K* x, int64_t stride, uint8_t* dst);
  void (*q6_K)(const Q6KPanelLayout& L, const quant::BlockQ6_K* x, int64_t stride, uint8_t* dst);
  void (*q8_0)(const Q80PanelLayout& L, const quant::BlockQ8_0* x, int64_t stride, uint8_t* dst);
};

// x86: AVX2 8 x 8 transposes where the process may run AVX2 (repack_full_avx2.cpp); AArch64: none
// yet (repack_full_a64.cpp).
const FullPackers* full_packers();

}  // namespace ckjit::jit::detail
