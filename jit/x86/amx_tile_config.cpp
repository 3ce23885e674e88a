#include "jit/x86/amx_tile_config.h"

#include "runtime/error.h"

namespace ckjit::jit {

void AmxTileConfig::set_rows(int r) {
  for (int t = 0; t < streams; ++t) bytes[size_t(48 + t)] = uint8_t(r);
  bytes[size_t(48 + kATile)] = uint8_t(r);
}

AmxTileConfig amx_tile_config(const KernelSpec& spec) {
  if (spec.isa != IsaPath::Amx) throw Error("amx_tile_config: not an AMX spec: " + spec.to_string());
  AmxTileConfig c;
  c.streams = spec.nr;  // weight streams (SwiGLU: gate and up of nr/2 output panels)
  if (c.streams < 1 || c.streams > 2) throw Error("AMX kernels take nr = 1 or 2 (tile budget): " + spec.to_string());
  if (spec.mr != 16) throw Error("AMX kernels work on 16-row tiles: mr must be 16: " + spec.to_string());
  // Elements per tile product: one scale sub-block (Q6_K: 16) or 32 (Q4_K, Q5_K, Q8_0 blocks).
  const int kdim = spec.wtype == TensorType::Q6_K ? 16 : 32;
  c.bytes[0] = 1;  // palette 1
  auto set = [&](int tile, int rows, int colsb) {
    c.bytes[size_t(16 + 2 * tile)] = uint8_t(colsb & 0xff);
    c.bytes[size_t(17 + 2 * tile)] = uint8_t(colsb >> 8);
    c.bytes[size_t(48 + tile)] = uint8_t(rows);
  };
  for (int t = 0; t < c.streams; ++t) {
    set(t, 16, 64);                      // C: 16 rows x 16 int32
    set(AmxTileConfig::kBTile0 + t, kdim / 4, 64);  // B: quad rows x (16 columns x 4 bytes)
  }
  set(AmxTileConfig::kATile, 16, kdim);  // A: 16 rows x kdim int8
  return c;
}

}  // namespace ckjit::jit
