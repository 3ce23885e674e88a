#include "runtime/synth/compact_text.h"

#include <cstring>
#include <filesystem>
#include <system_error>
#include <vector>

#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"
#include "runtime/synth/synth_model.h"

namespace ckjit::synth {

namespace {
constexpr const char* kPrefix = "ckjit.compact.";
}

bool is_compact_text(const std::string& path) { return gguf::GgufFile::open(path).has("ckjit.compact.used_ids"); }

void expand_compact_text(const std::string& compact_path, const std::string& tokenizer_dir, const std::string& out_path) {
  const gguf::GgufFile f = gguf::GgufFile::open(compact_path);
  const std::string what = "compact model '" + compact_path + "'";
  if (f.find("general.architecture") == nullptr || f.get<std::string>("general.architecture") != "qwen3vl")
    throw Error(what + ": not a qwen3vl text file");
  const std::vector<int32_t> used = f.get_array<int32_t>("ckjit.compact.used_ids");
  const int64_t n_vocab = f.get_u32("ckjit.compact.n_vocab");
  const std::vector<uint8_t> filler = f.get_array<uint8_t>("ckjit.compact.filler");
  const gguf::TensorInfo* te = f.find_tensor("token_embd.weight");
  if (te == nullptr) throw Error(what + ": no token_embd.weight");
  const uint64_t row_bytes = te->n_bytes / uint64_t(std::max<int64_t>(1, te->ne[1]));
  if (te->ne[1] != int64_t(used.size()) || te->n_dims != 2)
    throw Error(what + ": token_embd.weight has " + std::to_string(te->ne[1]) + " rows for " +
                std::to_string(used.size()) + " used ids");
  if (filler.size() != row_bytes) throw Error(what + ": ckjit.compact.filler is not one row of token_embd");
  // A vocabulary no tokenizer has, or a table no memory holds, is a bad file, not an allocation failure.
  if (n_vocab < int64_t(used.size()) || n_vocab > (int64_t(1) << 22) || uint64_t(n_vocab) * row_bytes > (uint64_t(1) << 34))
    throw Error(what + ": ckjit.compact.n_vocab " + std::to_string(n_vocab) + " is out of range");
  for (size_t i = 0; i < used.size(); ++i)
    if (used[i] < 0 || used[i] >= n_vocab || (i && used[i] <= used[i - 1]))
      throw Error(what + ": ckjit.compact.used_ids must ascend within [0, n_vocab)");
  if (f.has("tokenizer.ggml.tokens")) throw Error(what + ": a compact file carries no tokenizer");

  gguf::GgufWriter w;
  for (const gguf::KeyValue& kv : f.metadata())
    if (kv.key.rfind(kPrefix, 0) != 0) w.set_value(kv.key, kv.value);
  set_qwen3_tokenizer(w, tokenizer_dir, n_vocab);
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::vector<int64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    if (t.name != "token_embd.weight") {
      w.add_tensor(t.name, t.type.type, ne, std::vector<uint8_t>(t.data, t.data + t.n_bytes));
      continue;
    }
    std::vector<uint8_t> full(size_t(n_vocab) * row_bytes);
    for (int64_t r = 0, u = 0; r < n_vocab; ++r) {
      const bool is_used = u < int64_t(used.size()) && used[size_t(u)] == r;
      std::memcpy(full.data() + size_t(r) * row_bytes, is_used ? t.data + size_t(u) * row_bytes : filler.data(), row_bytes);
      u += is_used;
    }
    ne[1] = n_vocab;
    w.add_tensor(t.name, t.type.type, ne, std::move(full));
  }
  const std::string tmp = out_path + ".tmp";
  w.write_file(tmp);
  std::error_code ec;
  std::filesystem::rename(tmp, out_path, ec);
  if (ec) throw Error("cannot move " + tmp + " to " + out_path + ": " + ec.message());
}

}  // namespace ckjit::synth
