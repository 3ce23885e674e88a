// GgufWriter::declare_tensor + write_file(path, producer): tensors produced while the file is
// written give the same bytes as tensors added up front; a producer that gives the wrong amount is
// an Error; to_bytes() and write_file(path) refuse declared tensors.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>

#include "gguf_test_files.h"
#include "runtime/error.h"
#include "tests/unit/slurp.h"

using namespace gguf_test;

namespace {

using test_io::slurp;

}  // namespace

TEST_SUITE("gguf") {

TEST_CASE("declared tensors streamed by a producer match tensors added up front") {
  const std::vector<uint8_t> a = pattern_bytes(4 * 6, 1), b = pattern_bytes(144 * 2, 2), c = pattern_bytes(2 * 5, 3);
  GgufWriter whole;
  whole.set_string("general.architecture", "qwen3vl");
  whole.add_tensor("a", TensorType::F32, {6}, a);
  whole.add_tensor("b", TensorType::Q4_K, {256, 2}, b);
  whole.add_tensor("c", TensorType::F16, {5}, c);

  GgufWriter streamed;
  streamed.set_string("general.architecture", "qwen3vl");
  streamed.declare_tensor("a", TensorType::F32, {6});
  streamed.add_tensor("b", TensorType::Q4_K, {256, 2}, b);  // added and declared tensors mix
  streamed.declare_tensor("c", TensorType::F16, {5});
  CHECK(streamed.tensor_count() == 3);
  CHECK(streamed.tensor_bytes(1) == 288);
  CHECK_THROWS_AS(streamed.to_bytes(), ckjit::Error);
  auto path = (scratch_dir() / "streamed.gguf").string();
  CHECK_THROWS_AS(streamed.write_file(path), ckjit::Error);

  std::vector<size_t> asked;
  streamed.write_file(path, [&](size_t i, const GgufWriter::ByteSink& sink) {
    asked.push_back(i);
    const std::vector<uint8_t>& data = i == 0 ? a : c;
    sink(data.data(), 5);  // in pieces
    sink(data.data() + 5, data.size() - 5);
  });
  CHECK(asked == std::vector<size_t>{0, 2});
  std::vector<uint8_t> want = whole.to_bytes();
  CHECK(slurp(path) == std::string(want.begin(), want.end()));
  CHECK(GgufFile::open(path).tensor("c").n_bytes == 10);
}

TEST_CASE("a producer giving too few or too many bytes is an error") {
  GgufWriter w;
  w.declare_tensor("x", TensorType::F32, {4});
  auto path = (scratch_dir() / "short.gguf").string();
  const uint8_t bytes[32] = {};
  CHECK_THROWS_WITH_AS(w.write_file(path, [&](size_t, const GgufWriter::ByteSink& sink) { sink(bytes, 12); }),
                       doctest::Contains("producer gave 12 bytes"), ckjit::Error);
  CHECK_THROWS_WITH_AS(w.write_file(path, [&](size_t, const GgufWriter::ByteSink& sink) { sink(bytes, 20); }),
                       doctest::Contains("more bytes"), ckjit::Error);
  CHECK_THROWS_AS(w.declare_tensor("x", TensorType::F32, {4}), ckjit::Error);       // duplicate
  CHECK_THROWS_AS(w.declare_tensor("q", TensorType::Q4_K, {100}), ckjit::Error);    // not whole blocks
}

}  // TEST_SUITE
