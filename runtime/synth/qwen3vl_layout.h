#pragma once
// What a Qwen3-VL GGUF pair holds, as llama.cpp's converter lays it out (spec/qwen3vl.md A.1/A.2,
// B.1/B.2; type mix per spec/quants.md §9): model dimensions (with the published presets), and the
// ordered tensor lists of the text file (architecture qwen3vl) and of the mmproj (clip,
// qwen3vl_merger) with names, shapes and types. The decoder and the vision encoder reuse the names.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/tensor_type.h"

namespace ckjit::qwen3vl {

struct TextDims {
  int64_t n_embd = 0;       // E
  int64_t n_layer = 0;
  int64_t n_ff = 0;         // F
  int64_t n_head = 0;       // Hq
  int64_t n_head_kv = 0;    // Hkv
  int64_t head_dim = 128;   // key_length = value_length (may differ from E / Hq)
  int64_t n_vocab = 151936;
  bool tied_output = true;  // no output.weight: llama.cpp reuses token_embd.weight
  uint32_t context_length = 262144;
  float rope_freq_base = 5000000.0f;
  float rms_eps = 1e-6f;
  std::array<int32_t, 4> rope_sections{24, 20, 20, 0};
  int64_t n_deepstack = 3;
};

struct VisionDims {
  int64_t n_embd = 0;        // C
  int64_t n_layer = 0;       // depth
  int64_t n_ff = 0;          // Fv
  int64_t n_head = 16;
  int64_t patch_size = 16;
  int64_t image_size = 768;  // sqrt(n_pos) * patch: only for llama.cpp's warm-up
  int64_t n_pos = 2304;      // learned 48x48 position table
  int64_t merge_size = 2;
  float eps = 1e-6f;
  std::vector<int64_t> deepstack_layers;  // absolute vision layer indices, in order
};

struct ModelDims {
  std::string preset;
  TextDims text;
  VisionDims vision;
};

// "tiny" (small shapes for tests; real vocabulary), "2b", "4b", "8b" (the published Qwen3-VL
// dimensions, spec E). Error for any other name.
ModelDims preset_dims(std::string_view name);
const std::vector<std::string>& preset_names();

// Checks the dimensions llama.cpp and the K-quant formats need (positive sizes, Hq a multiple of
// Hkv, row lengths that are multiples of the block size of their type, deepstack indices in range).
void validate(const ModelDims& dims);

// Weight type mixes of the text file.
enum class TextMix {
  Q4_K_M,  // llama-quantize's Q4_K_M (quants.md §9.1)
  Mixed,   // Q4_K_M plus Q5_K and Q8_0 tensors (test coverage for other block types), see text_tensors
};
// MmprojType: the converter's --outtype for the mmproj (quants.md §9.2).
enum class MmprojType { F16, Q8_0 };

TextMix parse_text_mix(std::string_view s);         // "q4_k_m" | "mixed"
MmprojType parse_mmproj_type(std::string_view s);   // "f16" | "q8_0"
std::string text_mix_name(TextMix m);               // "Q4_K_M" | "MIXED" (used in file names)
std::string mmproj_type_name(MmprojType t);         // "f16" | "q8_0"
uint32_t text_file_type(TextMix m);                 // general.file_type: 15 (MOSTLY_Q4_K_M) / 15
uint32_t mmproj_file_type(MmprojType t);            // 1 (MOSTLY_F16) / 7 (MOSTLY_Q8_0)

struct TensorSpec {
  std::string name;
  std::vector<int64_t> ne;  // GGUF order, ne[0] contiguous
  TensorType type;
};

// Tensor names (spec A.2, B.2).
std::string blk(int64_t layer, std::string_view suffix);    // "blk.3.attn_q.weight"
std::string vblk(int64_t layer, std::string_view suffix);   // "v.blk.3.ln1.weight"
std::string deepstack(int64_t layer, std::string_view suffix);  // "v.deepstack.5.fc1.weight"

// llama.cpp's use_more_bits(i, n) (quants.md §9.1).
bool use_more_bits(int64_t i, int64_t n);

// Text tensors in file order: token_embd, then per layer attn_norm, attn_q, attn_k, attn_v,
// attn_q_norm, attn_k_norm, attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down, then output_norm and
// (untied only) output. Types for Q4_K_M: token_embd Q6_K when tied else Q4_K; output Q6_K; attn_v
// and ffn_down Q6_K where use_more_bits(layer, n_layer) (file order = layer order) else Q4_K; other
// matrices Q4_K; norms F32. Mixed changes: odd layers attn_q and ffn_up -> Q5_K; even layers attn_k
// and ffn_gate -> Q8_0; an untied output -> Q8_0.
std::vector<TensorSpec> text_tensors(const TextDims& d, TextMix mix);

// Mmproj tensors in file order: patch_embd (two temporal slices, bias), position_embd, per vision
// layer ln1, attn_qkv, attn_out, ln2, ffn_up, ffn_down (weights and biases), post_ln, mm.0, mm.2,
// then the deepstack mergers (norm, fc1, fc2) in layer order. llama.cpp finds them all by name. proj_dim = text E. F16 file: 1-D tensors and
// position_embd F32, other matrices F16. Q8_0 file: patch_embd F32, matrices Q8_0.
std::vector<TensorSpec> mmproj_tensors(const VisionDims& v, int64_t proj_dim, MmprojType type);

}  // namespace ckjit::qwen3vl
