#pragma once
// The vision tower's shape as an mmproj GGUF states it (general.architecture "clip", projector
// qwen3vl_merger; spec/qwen3vl.md B.1/B.2). Nothing is assumed: widths, depth, heads, patch size and
// the deepstack layers (found, like llama.cpp, from the v.deepstack.N.* tensors) are read and every
// tensor the forward pass needs is checked for presence, shape and a supported type.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_reader.h"

namespace ckjit::vision {

struct VisionHparams {
  int64_t n_embd = 0;      // C
  int64_t n_layer = 0;
  int64_t n_ff = 0;        // Fv
  int64_t n_head = 0;
  int64_t head_dim = 0;    // C / n_head unless clip.vision.attention.head_dim says otherwise
  int64_t patch = 0;       // patch side in pixels
  int64_t merge = 2;       // spatial merge (2 x 2 patches per output row)
  int64_t proj_dim = 0;    // D: the text model's embedding width
  int64_t pos_side = 0;    // the learned position table is pos_side x pos_side
  float eps = 1e-6f;
  float mean[3] = {0.5f, 0.5f, 0.5f}, std[3] = {0.5f, 0.5f, 0.5f};
  std::vector<int64_t> deepstack_layers;  // absolute layer indices, increasing

  int64_t n_deepstack() const { return int64_t(deepstack_layers.size()); }
  // Floats per output row: [main | deepstack 0 .. n-1], D each.
  int64_t row_width() const { return proj_dim * (1 + n_deepstack()); }
  int64_t merged_width() const { return n_embd * merge * merge; }  // 4C
};

// Errors name the file and the problem: another architecture or projector, a missing key or
// tensor, a shape that does not fit the others, a weight type the tower has no kernel for.
VisionHparams read_vision_hparams(const gguf::GgufFile& f);

}  // namespace ckjit::vision
