// libFuzzer target for the Qwen tokenizer and the chat template: arbitrary bytes are tokenized
// with and without special-token parsing (ids must be in the vocabulary, and valid UTF-8 without
// specials must decode back to itself), rendered as a user turn of the chat template, and read
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
// Well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF). Invalid bytes become
// U+FFFD in the pre-tokenizer, as in llama.cpp, so only valid text must round-trip.
bool valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + size_t(n) > s.size()) return false;
    uint32_t cp = n == 1 ? c : n == 2 ? c & 0x1f : n == 3 ? c & 0x0f : c & 0x07;
    for (int k = 1; k < n; ++k) {
      const unsigned char d = static_cast<unsigned char>(s[i + size_t(k)]);
      if ((d >> 6) != 2) return false;
      cp = cp << 6 | (d & 0x3f);
    }
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += size_t(n);
  }
  return true;
}

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
      if (!special && valid_utf8(text) && tok.decode(ids, /*special=*/true) != text) __builtin_trap();  // lossless on text
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
