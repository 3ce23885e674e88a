#include "pair/pair_checks.h"

#include <cstdio>
#include <fstream>

#include "graph/text_model.h"
#include "runtime/error.h"
#include "topology/memory.h"
#include "vision/vision_model.h"

namespace ckjit::pair {

void check_pair(const vision::VisionHparams& v, const std::string& mmproj_name, const graph::Hparams& text,
                const std::string& model_name) {
  if (v.proj_dim != text.n_embd || v.n_deepstack() != text.n_deepstack)
    throw Error(mmproj_name + ": its rows are " + std::to_string(v.proj_dim) + " x (1 + " + std::to_string(v.n_deepstack()) +
                    " deepstack) wide, but " + model_name + " needs n_embd x (1 + deepstack) = " + std::to_string(text.n_embd) +
                    " x (1 + " + std::to_string(text.n_deepstack) + "): the mmproj belongs to another model",
                ErrorKind::bad_model);
}

void require_readable(const std::string& path, const char* what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(std::string("cannot open ") + what + " '" + path + "'", ErrorKind::io);
}

void require_load_memory(const gguf::GgufFile& text, const gguf::GgufFile* mmproj, vision::VisionPrecision precision) {
  const double text_bytes = graph::TextModel::load_bytes(text);
  const double vision_bytes = mmproj ? vision::VisionModel::load_bytes(*mmproj, precision) : 0.0;
  char what[160];
  std::snprintf(what, sizeof what, "the model's weights (text model %.0f MiB, vision tower %.0f MiB, repacked)", text_bytes / 1048576.0,
                vision_bytes / 1048576.0);
  topo::require_memory(text_bytes + vision_bytes, what, "use a smaller model or quantization");
}

}  // namespace ckjit::pair
