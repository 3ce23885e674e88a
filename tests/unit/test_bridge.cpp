// The bridge: prompt text with media markers + projector rows -> one mixed batch with llama.cpp's
// token layout and M-RoPE positions (spec/qwen3vl.md D.2, D.4), decoded by a session.
#include <doctest/doctest.h>

#include <cstring>

#include "graph/bridge.h"
#include "graph/generate.h"
#include "graph/session.h"
#include "graph/text_model.h"
#include "runtime/error.h"
#include "tiny_qwen3vl.h"
#include "tokenizer_fixture.h"

using namespace ckjit;
using namespace ckjit::graph;

TEST_SUITE("decoder") {

TEST_CASE("bridge: image rows between vision_start and vision_end / positions as llama.cpp's mtmd") {
  const tok::Tokenizer tk(tokfix::qwen3_vocab());
  const int64_t E = 8, DS = 2;
  std::vector<float> rows(12 * E * (1 + DS));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = float(i);
  const ImageRows img{4, 3, E * (1 + DS), rows.data()};
  // No marker: the image goes first (as mtmd-cli prepends it). Same ids as peer-cli reported for a
  // 4 x 3 image and "Describe": [151652, -1 x 12, 151653, 74785].
  BridgePrompt p = build_bridge_prompt(tk, "Describe", {img}, E, DS);
  std::vector<int32_t> want = {151652};
  want.insert(want.end(), 12, -1);
  want.push_back(151653);
  want.push_back(74785);
  CHECK(p.token_ids == want);
  REQUIRE(p.batch.size() == 15);
  CHECK(p.batch.pos[0] == Position::text(0));
  for (int i = 0; i < 12; ++i) {
    CAPTURE(i);
    CHECK(p.batch.pos[size_t(1 + i)] == Position{1, 1 + i / 4, 1 + i % 4, 0});
    CHECK(p.batch.token[size_t(1 + i)] == -1);
    CHECK(p.batch.embd[size_t(1 + i)] == rows.data() + i * E * (1 + DS));
    CHECK(p.batch.deepstack[size_t(1 + i)] == rows.data() + i * E * (1 + DS) + E);
  }
  CHECK(p.batch.pos[13] == Position::text(5));  // p0 + max(nx, ny) = 1 + 4
  CHECK(p.batch.pos[14] == Position::text(6));
  CHECK(p.next_position == 7);
  CHECK(p.batch.n_logits() == 1);
  CHECK(p.batch.logits.back() == 1);
  CHECK(p.segments.size() == 3);
  const auto lines = describe_bridge(p, DS);
  CHECK(lines[1].find("image rows 1-12 (4 x 3 merged patches), t=1 h=1-3 w=1-4") != std::string::npos);

  // Markers place images in the text; two images, the second taller than wide.
  const ImageRows tall{2, 5, E * (1 + DS), rows.data()};
  p = build_bridge_prompt(tk, "A<__media__>B<__media__>C", {img, tall}, E, DS);
  // A, vs, 12 rows, ve, B, vs, 10 rows, ve, C
  REQUIRE(p.batch.size() == 1 + 1 + 12 + 1 + 1 + 1 + 10 + 1 + 1);
  CHECK(p.batch.pos[2] == Position{2, 2, 2, 0});
  CHECK(p.batch.pos[14] == Position::text(6));   // ve after the first image: 2 + 4
  CHECK(p.batch.pos[15] == Position::text(7));   // B
  CHECK(p.batch.pos[16] == Position::text(8));   // vs
  CHECK(p.batch.pos[17] == Position{9, 9, 9, 0});
  CHECK(p.batch.pos[26] == Position{9, 13, 10, 0});
  CHECK(p.batch.pos[27] == Position::text(14));  // 9 + max(2, 5)
  CHECK(p.next_position == 16);

  CHECK_THROWS_WITH_AS(build_bridge_prompt(tk, "A<__media__>B<__media__>", {img}, E, DS), doctest::Contains("2 <__media__> markers for 1 images"), Error);
  CHECK_THROWS_WITH_AS(build_bridge_prompt(tk, "x", {img}, E, 0), doctest::Contains("mmproj and model do not match"), Error);
}

TEST_CASE("bridge: without a marker the images go in front of the user text so that a chat template puts them inside the user turn") {
  CHECK(with_media_markers("Read", 2) == "<__media__><__media__>Read");
  CHECK(with_media_markers("A<__media__>B", 2) == "A<__media__>B");
  CHECK(with_media_markers("Read", 0) == "Read");
  tinymodel::Spec s;
  const gguf::GgufFile f = gguf::GgufFile::from_bytes(tinymodel::bytes(s), "tiny.gguf");
  PromptOptions po;
  po.text = with_media_markers("Read the page.", 1);
  po.chat = true;
  // As peer-cli (llama.cpp's mtmd) lays out a chat prompt with one image: <|im_start|>user\n, the image, the text.
  const std::string t = prompt_text(f, po);
  CHECK(t.rfind("<|im_start|>user\n<__media__>Read the page.<|im_end|>", 0) != std::string::npos);
}

TEST_CASE("bridge: a mixed text + image prefix prefills as one batch - deepstack slices reach the model") {
  tinymodel::Spec s;
  s.vocab = &tokfix::qwen3_vocab();
  s.n_vocab = 151936;
  s.n_deepstack = 2;
  gguf::GgufFile f = gguf::GgufFile::from_bytes(tinymodel::bytes(s), "tiny.gguf");
  Workers pool(2);
  const TextModel model(f, ModelOptions{}, pool);
  const tok::Tokenizer tk(tokfix::qwen3_vocab());
  const int64_t E = model.hparams().n_embd, W = E * 3;
  std::vector<float> rows(size_t(6 * W));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = 0.02f * float(int(i % 13) - 6);
  const ImageRows img{3, 2, W, rows.data()};
  const BridgePrompt p = build_bridge_prompt(tk, "Read this page.", {img}, E, 2);
  Session a(model, SessionOptions{64, 512}, pool);
  const Logits one = a.decode(p.batch);
  std::vector<float> all(one.last(), one.last() + one.n_vocab);
  CHECK(a.next_position() == p.next_position);
  // The same prefix in chunks of 4 rows (text and image rows sharing chunks) gives the same logits:
  // rows never interact except through the KV cache.
  Session b(model, SessionOptions{64, 4}, pool);
  const Logits chunked = b.decode(p.batch);
  CHECK(std::memcmp(chunked.last(), all.data(), all.size() * sizeof(float)) == 0);
  // Without the deepstack slices the logits change.
  BridgePrompt q = p;
  for (auto& d : q.batch.deepstack) d = nullptr;
  Session c(model, SessionOptions{64, 512}, pool);
  const Logits no_ds = c.decode(q.batch);
  CHECK(std::memcmp(no_ds.last(), all.data(), all.size() * sizeof(float)) != 0);
}

}  // TEST_SUITE
