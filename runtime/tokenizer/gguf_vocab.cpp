#include "runtime/tokenizer/gguf_vocab.h"

namespace ckjit::tok {

TokenizerVocab vocab_from_gguf(const gguf::GgufFile& f) {
  if (!f.has("tokenizer.ggml.tokens")) throw Error(f.name() + ": no tokenizer in the file (tokenizer.ggml.tokens missing)");
  TokenizerVocab v;
  if (auto m = f.get_optional<std::string>("tokenizer.ggml.model")) v.model = *m;
  if (auto p = f.get_optional<std::string>("tokenizer.ggml.pre")) v.pre = *p;
  for (std::string_view s : f.get_string_array("tokenizer.ggml.tokens")) v.tokens.emplace_back(s);
  if (f.has("tokenizer.ggml.token_type")) v.token_types = f.get_array<int32_t>("tokenizer.ggml.token_type");
  if (f.has("tokenizer.ggml.merges"))
    for (std::string_view s : f.get_string_array("tokenizer.ggml.merges")) v.merges.emplace_back(s);
  if (auto b = f.get_optional<uint32_t>("tokenizer.ggml.bos_token_id")) v.bos_id = int32_t(*b);
  if (auto e = f.get_optional<uint32_t>("tokenizer.ggml.eos_token_id")) v.eos_id = int32_t(*e);
  if (auto a = f.get_optional<bool>("tokenizer.ggml.add_bos_token")) v.add_bos = *a;
  if (auto a = f.get_optional<bool>("tokenizer.ggml.add_eos_token")) v.add_eos = *a;
  return v;
}

}  // namespace ckjit::tok
