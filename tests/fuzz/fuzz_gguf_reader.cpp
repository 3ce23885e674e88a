// libFuzzer target for the GGUF reader: any input must either parse (and then every value and
// tensor range it hands out must be usable) or throw ckjit::Error. Any other exception, crash or
// sanitizer report is a bug. Build: tests/fuzz/build.sh (clang++), or the CMake target
// fuzz_gguf_reader when the project is configured with clang.
#include <cstddef>
#include <cstdint>

#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"

using namespace ckjit::gguf;

static void exercise(const GgufFile& f, const uint8_t* data, size_t size) {
  volatile uint64_t sink = 0;
  for (const auto& kv : f.metadata()) {
    if (f.find(kv.key) != &kv) __builtin_trap();
    sink = sink + to_display_string(kv.value, 4).size() + describe_type(kv.value).size();
    if (kv.value.type() == ValueType::ARRAY && kv.value.array().elem == ValueType::STRING) {
      for (std::string_view s : *kv.value.array().strings) sink = sink + (s.empty() ? 0 : uint8_t(s.back()));
    }
  }
  for (const auto& t : f.tensors()) {
    if (f.find_tensor(t.name) != &t) __builtin_trap();
    if (t.data < data || t.data > data + size || t.n_bytes > size_t(data + size - t.data)) __builtin_trap();
    if (t.n_bytes) sink = sink + t.data[0] + t.data[t.n_bytes - 1];
    sink = sink + t.shape_string().size();
  }
  // Typed getters on keys that may exist with any type: Error on mismatch, never anything else.
  try { sink = sink + f.get_optional<uint32_t>("general.alignment").value_or(0); } catch (const ckjit::Error&) {}
  try { sink = sink + f.get_optional<std::string_view>("general.architecture").value_or("").size(); } catch (const ckjit::Error&) {}
  try { sink = sink + f.get_array<int32_t>("tokenizer.ggml.token_type").size(); } catch (const ckjit::Error&) {}
  try { sink = sink + f.get_string_array("tokenizer.ggml.tokens").size(); } catch (const ckjit::Error&) {}
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    GgufFile f = GgufFile::from_memory(data, size, "fuzz.gguf");
    exercise(f, data, size);
  } catch (const ckjit::Error&) {
    // Rejected cleanly.
  }
  return 0;
}
