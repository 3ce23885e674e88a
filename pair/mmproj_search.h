#pragma once
// Where the projector is when only the text model is named: beside it, as LM Studio's and
// llama.cpp's downloads lay a pair out (model.gguf and mmproj-*.gguf in one folder). Every
// mmproj*.gguf there is opened and checked against the text model; the one that fits is taken, or
// of several that fit, the one whose name carries the model's (mmproj-X-F16.gguf for X-Q4_K_M.gguf:
// the names HF repos and llama.cpp's converter give).
#include <string>

#include "graph/hparams.h"

namespace ckjit::pair {

struct MmprojFound {
  std::string path;
  std::string note;  // "mmproj: <path> (found beside <model>)"
};

// Error (bad_model) when none fits or several do, listing every candidate and why it was refused.
// Whether the model's folder holds any mmproj*.gguf at all.
bool has_mmproj_beside(const std::string& model_path);
// wanted_by: what asks for the projector (an image's name), for the message.
MmprojFound find_mmproj_beside(const std::string& model_path, const graph::Hparams& text, const std::string& wanted_by);

}  // namespace ckjit::pair
