#pragma once
// The Qwen3-VL vision tower of an mmproj GGUF (spec/qwen3vl.md B.3): immutable after load, like
// graph::TextModel. encode() turns one preprocessed image into its projector rows: patch embedding
// (the two temporal kernels summed once at load), the interpolated position table, n_layer blocks
// of LayerNorm / QKV / 2D RoPE / full attention / output / LayerNorm / GELU MLP, the deepstack
// mergers after their layers, the main merger. Every matmul is a VisionMatmul (JIT, repacked once):
// which one each matrix gets is decided at load by the VisionPrecision.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "topology/workers.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/image/preprocess.h"
#include "runtime/op_profile.h"
#include "runtime/tap.h"
#include "topology/isa.h"
#include "vision/dense_linear.h"
#include "vision/vision_matmul.h"
#include "vision/vision_hparams.h"
#include "vision/vision_ops.h"

namespace ckjit::vision {

// One image's projector output: ny x nx rows (raster order of the merged grid) of row_width floats,
// [main (D) | deepstack 0 .. n-1 (D each)] — the layout of the peer's --dump-embd.
struct ImageEmbedding {
  // Unique in the process (never reused, also after the rows are freed): a session's cached
  // prompt knows which image its rows came from (pair::Context's prefix reuse).
  uint64_t id = next_id();
  int nx = 0, ny = 0;
  int64_t row_width = 0;
  std::vector<float> rows;
  int64_t n_rows() const { return int64_t(nx) * ny; }
  static uint64_t next_id();
};

// How the tower's matrices are multiplied, chosen once at load per matrix (the patch embedding,
// whose two temporal kernels are summed in f32 at load, always runs DenseLinear).
// f32 is the default: a Q8_0 mmproj in int8 (Q8_0 activations, as llama.cpp's vec_dot type) was
// measured further from llama.cpp's image rows than its f32 (1 - cos 1.75e-4 vs 1.3e-4, fixture
// q80-grey), so int8 stays a speed option with its stated tolerance (perf/RESULTS.md).
// bf16 rounds weights and inputs to BF16: with AMX-BF16 tiles where they are granted (fast, the
// hardware's sums: same bits for any thread count on one CPU, not across CPUs), else the f32 FMA
// chains over the same bf16 values (no faster than f32); tolerance in tests/unit/test_vision_bf16.cpp.
enum class VisionPrecision {
  f32,   // every matrix in f32 FMA panels (Q8_0 dequantized losslessly)
  int8,  // every matrix whose K is whole Q8_0 blocks in int8: float ones quantized to Q8_0 at load
  bf16,  // every matrix in bf16 x bf16 products with f32 sums (AMX-BF16 where granted)
};
const char* precision_name(VisionPrecision p);
// "f32", "int8", "bf16"; Error otherwise.
VisionPrecision parse_precision(const std::string& text);

class VisionModel {
 public:
  VisionModel(const gguf::GgufFile& file, const topo::Isa& isa, Workers& pool,
              VisionPrecision precision = VisionPrecision::f32);
  ~VisionModel();
  // The memory the constructor takes besides the file's mapping: every matrix repacked into
  // panels (F16 / BF16 kept at 2 bytes, F32 and dequantized Q8_0 at 4, int8 Q8_0 panels at ~1.25);
  // for a check before loading.
  static double load_bytes(const gguf::GgufFile& file, VisionPrecision precision = VisionPrecision::f32);

  const VisionHparams& hparams() const { return hp_; }
  // Preprocessing for this tower (patch, merge, mean/std from the file) with a token budget.
  image::PreprocessParams preprocess_params(int64_t min_tokens, int64_t max_tokens) const;
  // Error for a canvas that is not a whole number of merged patches.
  // prof: where the op timings go (phase encode); tap: where the checkpoints go (runtime/checkpoints.h);
  // nullptr for none.
  // abort: asked before each layer; true stops the encode (Error, kind cancelled).
  ImageEmbedding encode(Workers& pool, const image::PixelsF32& px, OpProfile* prof = nullptr, Tap* tap = nullptr,
                        const std::function<bool()>& abort = {}) const;
  std::vector<std::string> describe() const;
  // The bytes encode() allocates for an image of n_patches patches (its activations, the f16
  // key/value panels of the attention, the projector rows), for a memory check before it runs.
  double encode_bytes(int64_t n_patches) const { return encode_bytes(hp_, n_patches); }
  // The same from the hyper-parameters alone: the plan checked before a load (pair/pair_checks.h).
  static double encode_bytes(const VisionHparams& hp, int64_t n_patches);
  // The GGUF weight tensor each matmul was built from and its op (vision_linears.cpp): the dtype
  // report of ckjit run --report. The patch kernel appears under both temporal tensors.
  std::vector<std::pair<std::string, const VisionMatmul*>> linears_by_tensor() const;

 private:
  struct Layer {
    const float *ln1_w, *ln1_b, *ln2_w, *ln2_b;
    std::unique_ptr<VisionMatmul> qkv, out, up, down;
  };
  struct Merger {
    const float *norm_w, *norm_b;  // over C (main merger: post_ln, before grouping) or 4C (deepstack)
    std::unique_ptr<VisionMatmul> fc1, fc2;
  };
  void merge(Workers& pool, const Merger& m, bool norm_before_grouping, const float* z, int64_t n, float* out,
             int64_t ldo, std::vector<float>& a, std::vector<float>& xr, std::vector<float>& h, OpProfile* prof,
             const char* op) const;

  VisionHparams hp_;
  topo::Isa isa_;  // the load's target: the attention's panels follow its widest path
  bool amx_bf16_attention_ = false;  // bf16 precision where AMX-BF16 runs: the attention in bf16 tiles too
  std::unique_ptr<DenseLinear> patch_;
  std::vector<float> pos_;  // pos_side^2 x C
  std::vector<Layer> layers_;
  Merger main_;
  std::vector<Merger> deepstack_;      // in hp_.deepstack_layers order
  std::vector<int> deepstack_of_layer_;  // per layer: index into deepstack_, or -1
  GeluTable gelu_;
};

}  // namespace ckjit::vision
