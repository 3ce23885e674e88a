// tests/unit/fixture_cache.h: a model built once per test binary is build()'s bytes, and every field
// of the spec that changes the bytes changes the key.
#include <doctest/doctest.h>

#include <filesystem>

#include "tests/unit/tiny_qwen3vl.h"

TEST_SUITE("tests") {

TEST_CASE("fixture cache: a cached tiny model is build()'s bytes / specs that differ get files that differ") {
  tinymodel::Spec s;
  s.n_vocab = 64;
  s.n_layer = 1;
  s.seed = 4242;
  const auto fresh = tinymodel::build(s).to_bytes();
  CHECK(tinymodel::bytes(s) == fresh);
  CHECK(tinymodel::bytes(s) == fresh);  // the second read comes from the file
  CHECK(std::filesystem::exists(tinymodel::cached_file(s)));
  CHECK(tinymodel::cached_file(s).parent_path() == fixture_cache::dir());
  auto key = tinymodel::cache_key(s);
  tinymodel::Spec t = s;
  t.weight_scale = 0.0800001f;
  CHECK(tinymodel::cache_key(t) != key);
  t = s;
  t.seed = 4243;
  CHECK(tinymodel::cache_key(t) != key);
  CHECK(tinymodel::bytes(t) != fresh);
  t = s;
  t.skip_tensors = {"output_norm.weight"};
  CHECK(tinymodel::cache_key(t) != key);
  t = s;
  t.reshape["output_norm.weight"] = {3};
  CHECK(tinymodel::cache_key(t) != key);
  t = s;
  t.up_type = ckjit::TensorType::Q8_0;
  CHECK(tinymodel::cache_key(t) != key);
}

}  // TEST_SUITE
