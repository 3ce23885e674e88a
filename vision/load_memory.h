#pragma once
// The memory check before a load: the repacked copies of the text model's and the mmproj's weights
// must fit in what the machine (and the cgroup) still has, or the load fails in a second with a
// message instead of minutes later with an OOM kill.
#include "runtime/gguf/gguf_reader.h"

namespace ckjit::vision {

// Error "not enough memory for the model's weights ..." when they do not fit; mmproj may be null.
void require_load_memory(const gguf::GgufFile& text, const gguf::GgufFile* mmproj);

}  // namespace ckjit::vision
