// Writes a few small valid GGUF files (every value type, several tensor types) into the directory
// given as argv[1]: the fuzzer's starting corpus, so that it mutates real structure.
#include <cstdio>
#include <string>
#include <vector>

#include "runtime/gguf/gguf_writer.h"

using namespace ckjit;
using namespace ckjit::gguf;

static std::vector<uint8_t> bytes(size_t n) { return std::vector<uint8_t>(n, 0x3c); }

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds DIR\n");
    return 2;
  }
  std::string dir = argv[1];
  {
    GgufWriter w;
    w.set_string("general.architecture", "qwen3vl");
    w.set_u32("qwen3vl.block_count", 2);
    w.set_f32("qwen3vl.rope.freq_base", 5e6f);
    w.set_array<int32_t>("qwen3vl.rope.dimension_sections", std::vector<int32_t>{24, 20, 20, 0});
    w.set_string_array("tokenizer.ggml.tokens", std::vector<std::string>{"a", "b", "ab", "<|im_end|>"});
    w.set_array<int32_t>("tokenizer.ggml.token_type", std::vector<int32_t>{1, 1, 1, 3});
    w.set_string_array("tokenizer.ggml.merges", std::vector<std::string>{"a b"});
    w.set_bool("tokenizer.ggml.add_bos_token", false);
    w.add_tensor("token_embd.weight", TensorType::Q8_0, {32, 4}, bytes(4 * 34));
    w.add_tensor("output_norm.weight", TensorType::F32, {32}, bytes(128));
    w.add_tensor("blk.0.ffn_down.weight", TensorType::Q4_K, {256, 1}, bytes(144));
    w.write_file(dir + "/text.gguf");
  }
  {
    GgufWriter w;
    w.set_version(2);
    w.set_alignment(64);
    w.set_u8("u8", 1); w.set_i8("i8", -1); w.set_u16("u16", 2); w.set_i16("i16", -2);
    w.set_i32("i32", -3); w.set_u64("u64", 4); w.set_i64("i64", -4); w.set_f64("f64", 0.5);
    w.set_string("s", "x");
    w.set_array<float>("clip.vision.image_mean", std::vector<float>{0.5f, 0.5f, 0.5f});
    w.set_bool_array("clip.vision.is_deepstack_layers", {false, true});
    w.set_array<uint64_t>("u64s", std::vector<uint64_t>{1, 2});
    w.add_tensor("v.patch_embd.weight", TensorType::F16, {16, 2, 3}, bytes(16 * 2 * 3 * 2));
    w.add_tensor("v.blk.0.attn_qkv.bias", TensorType::BF16, {8}, bytes(16));
    w.add_tensor("scalar", TensorType::F32, {}, bytes(4));
    w.add_tensor("q6", TensorType::Q6_K, {256}, bytes(210));
    w.write_file(dir + "/mmproj.gguf");
  }
  {
    GgufWriter w;  // metadata only
    w.set_string("general.name", "empty");
    w.write_file(dir + "/meta_only.gguf");
  }
  return 0;
}
