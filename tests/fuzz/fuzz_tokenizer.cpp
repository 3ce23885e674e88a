// libFuzzer target for the Qwen tokenizer and the chat template: arbitrary bytes are tokenized
// with and without special-token parsing (ids must be in the vocabulary, and without specials the
// ids must decode back to the input bytes), rendered as a user turn of the chat template, and read
// as a template text. The real Qwen3 vocabulary comes from CKJIT_FUZZ_TOKENIZER_DIR (tools/setup.sh
// unpacks it). Anything but a ckjit::Error is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "runtime/error.h"
#include "runtime/tokenizer/chat_template.h"
#include "runtime/tokenizer/hf_tokenizer_json.h"
#include "runtime/tokenizer/tokenizer.h"

namespace {
const ckjit::tok::Tokenizer& tokenizer() {
  static const ckjit::tok::Tokenizer t = [] {
    ckjit::tok::HfTokenizerOptions o;
    o.vocab_size = 151936;
    o.fallback_bos_id = 151643;
    const char* dir = std::getenv("CKJIT_FUZZ_TOKENIZER_DIR");
    return ckjit::tok::Tokenizer(ckjit::tok::vocab_from_hf_dir(dir ? dir : CKJIT_FUZZ_TOKENIZER_DIR, o));
  }();
  return t;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const ckjit::tok::Tokenizer& tok = tokenizer();
  try {
    for (bool special : {false, true}) {
      const auto ids = tok.encode(text, /*add_special=*/false, special);
      for (int32_t id : ids)
        if (id < 0 || id >= tok.n_tokens()) __builtin_trap();
      if (!special && tok.decode(ids, /*special=*/true) != text) __builtin_trap();  // byte-level BPE is lossless
    }
    ckjit::tok::ChatMessage m{"user", std::string(text), std::nullopt};
    ckjit::tok::ChatOptions co;
    co.style = ckjit::tok::chat_style_from_template(text);
    const std::string rendered = ckjit::tok::render_chat({&m, 1}, co);
    if (rendered.find(text) == std::string::npos) __builtin_trap();
  } catch (const ckjit::Error&) {
  }
  return 0;
}
