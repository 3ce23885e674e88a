#pragma once
// Reads a llama.cpp graph dump (peer-cli --dump-tensors DIR: index.json + text.bin / vision.bin,
// one record per evaluated node and ubatch) and, optionally, its projector rows (--dump-embd), as
// ckjit checkpoints (runtime/checkpoints.h). llama.cpp reuses names (Qcur before and after RoPE, one
// record per ubatch), so records are matched by name, order within the ubatch and shape.
// Ubatches are delimited by the records of attn_norm-0; a record with fewer rows than its ubatch
// holds that ubatch's last rows (llama.cpp keeps only the output rows after the last layer's
// attention).
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/tap.h"

namespace ckjit::xray {

// What the run being compared looks like: a dump that does not fit is refused.
struct DumpShape {
  int64_t n_layer = 0, n_embd = 0, q_width = 0, kv_width = 0, n_ff = 0, n_vocab = 0, n_deepstack = 0;
  int64_t n_rows = 0;                   // prompt rows + decode steps of the trajectory
  int64_t v_layers = 0, v_embd = 0, v_ff = 0, v_patches = 0, proj_dim = 0;  // vision (0: none)
};

// The regex for peer-cli --dump-filter that keeps exactly the nodes read here.
std::string llama_dump_filter(bool vision);

// Checkpoint records in ckjit names. Error (naming the dump and what does not fit) for a dump of
// another model, prompt length or image size.
std::vector<TapRecord> read_llama_dump(const std::string& dir, const DumpShape& shape);
// Projector rows of --dump-embd (float32 [rows][proj_dim x (1 + n_deepstack)]) as V.merger and
// V.deepstack<k>.
std::vector<TapRecord> read_llama_embd(const std::string& path, const DumpShape& shape);

}  // namespace ckjit::xray
