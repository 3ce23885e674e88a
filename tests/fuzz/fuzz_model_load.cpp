// libFuzzer target for loading a model's description from a GGUF: the text model's
// hyper-parameters and its tensor table (presence, exact shapes, supported types:
// graph::read_hparams + find_tensors) and the mmproj's (vision::read_vision_hparams). Any input must
// pass them or give a ckjit::Error; any other exception, crash or sanitizer report is a bug. The
// weights themselves (repacking, JIT) are not run here.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "graph/hparams.h"
#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "vision/vision_hparams.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto f = ckjit::gguf::GgufFile::from_bytes(std::vector<uint8_t>(data, data + size), "fuzz.gguf");
    try {
      const ckjit::graph::Hparams hp = ckjit::graph::read_hparams(f);
      const ckjit::graph::ModelTensors t = ckjit::graph::find_tensors(f, hp);
      if (!t.token_embd || int64_t(t.layers.size()) != hp.n_layer) __builtin_trap();
    } catch (const ckjit::Error&) {
    }
    try {
      (void)ckjit::vision::read_vision_hparams(f);
    } catch (const ckjit::Error&) {
    }
  } catch (const ckjit::Error&) {
  }
  return 0;
}
