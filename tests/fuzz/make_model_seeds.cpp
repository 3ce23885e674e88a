// Seeds for fuzz_model_load, written to DIR: small valid Qwen3-VL text GGUFs
// (tests/unit/tiny_qwen3vl.h, one layer, 32 tokens: ~200 KB; untied, and tied with deepstack) and
// small valid mmprojs (runtime/synth's layout and metadata, a 32-wide two-layer tower: f16 with a
// deepstack layer, q8_0 with two), so the fuzzer mutates files that pass every check and so
// reaches the text tensor table's and read_vision_hparams' checks deep inside.
#include <cstdio>
#include <string>

#include "graph/hparams.h"
#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/synth/synth_model.h"
#include "tests/unit/tiny_qwen3vl.h"
#include "vision/vision_hparams.h"

namespace {

void write_mmproj(const std::string& path, ckjit::qwen3vl::MmprojType type, std::vector<int64_t> deepstack) {
  ckjit::qwen3vl::ModelDims d = ckjit::qwen3vl::preset_dims("tiny");  // the text side gives the projection width (256)
  d.text.n_deepstack = int64_t(deepstack.size());
  d.vision.n_embd = 32, d.vision.n_layer = 3, d.vision.n_ff = 64, d.vision.n_head = 2, d.vision.patch_size = 4;
  d.vision.image_size = 16, d.vision.n_pos = 16, d.vision.merge_size = 2, d.vision.deepstack_layers = std::move(deepstack);
  ckjit::synth::SynthOptions o;
  o.mmproj_type = type;
  ckjit::synth::write_qwen3vl_mmproj(d, o, path);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return std::fprintf(stderr, "usage: make_model_seeds DIR\n"), 2;
  const std::string dir = argv[1];
  tinymodel::Spec s;
  s.n_layer = 1, s.n_ff = 256, s.n_head = 4, s.n_head_kv = 1, s.n_vocab = 32;
  s.tied = false;
  tinymodel::build(s).write_file(dir + "/text-untied.gguf");
  s.tied = true, s.n_deepstack = 1;
  tinymodel::build(s).write_file(dir + "/text-tied-deepstack.gguf");
  write_mmproj(dir + "/mmproj-f16.gguf", ckjit::qwen3vl::MmprojType::F16, {1});
  write_mmproj(dir + "/mmproj-q8_0.gguf", ckjit::qwen3vl::MmprojType::Q8_0, {0, 2});
  // Each seed passes the checks it is there to reach (a seed that fails early would only fuzz the start).
  try {
    for (const char* t : {"text-untied.gguf", "text-tied-deepstack.gguf"}) {
      const auto f = ckjit::gguf::GgufFile::open(dir + "/" + t);
      (void)ckjit::graph::find_tensors(f, ckjit::graph::read_hparams(f));
    }
    for (const char* m : {"mmproj-f16.gguf", "mmproj-q8_0.gguf"}) (void)ckjit::vision::read_vision_hparams(ckjit::gguf::GgufFile::open(dir + "/" + m));
  } catch (const ckjit::Error& e) {
    return std::fprintf(stderr, "make_model_seeds: a seed fails its checks: %s\n", e.what()), 1;
  }
  return 0;
}
