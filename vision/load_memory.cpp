#include "vision/load_memory.h"

#include <cstdio>

#include "graph/text_model.h"
#include "topology/memory.h"
#include "vision/vision_model.h"

namespace ckjit::vision {

void require_load_memory(const gguf::GgufFile& text, const gguf::GgufFile* mmproj) {
  const double text_bytes = graph::TextModel::load_bytes(text);
  const double vision_bytes = mmproj ? VisionModel::load_bytes(*mmproj) : 0.0;
  char what[160];
  std::snprintf(what, sizeof what, "the model's weights (text model %.0f MiB, vision tower %.0f MiB, repacked)", text_bytes / 1048576.0,
                vision_bytes / 1048576.0);
  topo::require_memory(text_bytes + vision_bytes, what, "use a smaller model or quantization");
}

}  // namespace ckjit::vision
