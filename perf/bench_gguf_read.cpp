// How long opening (mmap + full validation) a GGUF file takes.
//   bench_gguf_read            writes a Qwen3-VL-like file (151936-token vocabulary, 151387 merges,
//                              28 blocks of tensors) to $TMPDIR and times opening it
//   bench_gguf_read FILE.gguf  times opening FILE (e.g. a real model)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"

using namespace ckjit;
using namespace ckjit::gguf;

static std::string write_qwen3vl_like(const std::string& path) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3vl");
  w.set_u32("general.file_type", 15);
  w.set_u32("qwen3vl.block_count", 28);
  w.set_u32("qwen3vl.embedding_length", 2048);
  w.set_array<int32_t>("qwen3vl.rope.dimension_sections", std::vector<int32_t>{24, 20, 20, 0});
  std::vector<std::string> tokens, merges;
  std::vector<int32_t> types;
  for (int i = 0; i < 151936; ++i) {
    tokens.push_back("\xc4\xa0tok" + std::to_string(i));
    types.push_back(i < 151643 ? 1 : 3);
  }
  for (int i = 0; i < 151387; ++i) merges.push_back("\xc4\xa0t ok" + std::to_string(i));
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string_array("tokenizer.ggml.tokens", tokens);
  w.set_array<int32_t>("tokenizer.ggml.token_type", types);
  w.set_string_array("tokenizer.ggml.merges", merges);
  // Real shapes would make a GiB-sized file; the tensor table's size is what matters here.
  for (int b = 0; b < 28; ++b) {
    for (const char* t : {"attn_q", "attn_k", "attn_v", "attn_output", "ffn_gate", "ffn_up", "ffn_down"}) {
      w.add_tensor("blk." + std::to_string(b) + "." + t + ".weight", TensorType::Q4_K, {256, 4},
                   std::vector<uint8_t>(4 * 144));
    }
    for (const char* t : {"attn_norm", "ffn_norm", "attn_q_norm", "attn_k_norm"}) {
      w.add_tensor("blk." + std::to_string(b) + "." + t + ".weight", TensorType::F32, {128}, std::vector<uint8_t>(512));
    }
  }
  w.write_file(path);
  return path;
}

int main(int argc, char** argv) {
  try {
    std::string path = argc > 1 ? argv[1]
                                : write_qwen3vl_like((std::filesystem::temp_directory_path() / "ckjit_bench_gguf.gguf").string());
    std::vector<double> ms;
    size_t n_kv = 0, n_tensors = 0;
    for (int i = 0; i < 10; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      GgufFile f = GgufFile::open(path);
      auto t1 = std::chrono::steady_clock::now();
      n_kv = f.metadata().size();
      n_tensors = f.tensors().size();
      ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%s: %zu keys, %zu tensors, %zu bytes\nopen+validate: best %.2f ms, median %.2f ms (10 runs)\n",
                path.c_str(), n_kv, n_tensors, size_t(std::filesystem::file_size(path)), ms.front(), ms[ms.size() / 2]);
    if (argc <= 1) std::filesystem::remove(path);
    return 0;
  } catch (const ckjit::Error& e) {
    std::fprintf(stderr, "bench_gguf_read: %s\n", e.what());
    return 1;
  }
}
