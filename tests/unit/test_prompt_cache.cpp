// Prefix reuse's bookkeeping (pair/prompt_cache.h): the reusable rows stop at the first differing
// key, at the rows the session holds, before the last row, and move back from a cut that would
// change which rows prefill as one-row chunks (those take decode's order); a suffix keeps each
// row's position, segments and the whole token history.
#include <doctest/doctest.h>

#include <vector>

#include "pair/prompt_cache.h"

using namespace ckjit;
using namespace ckjit::pair;

namespace {

RenderedPrompt ids(int n, int first = 100) {
  RenderedPrompt r;
  for (int i = 0; i < n; ++i) r.ids.push_back(first + i);
  return r;
}

std::vector<uint64_t> keys_of(const RenderedPrompt& r) {
  Prompt none;
  return prompt_row_keys(none, r);
}

}  // namespace

TEST_SUITE("pair") {
TEST_CASE("prompt cache: reusable rows stop at a difference / the rows held / the last row and one-row chunk changes") {
  PromptCache c;
  const RenderedPrompt a = ids(8);
  c.remember(keys_of(a));
  // The same prompt: not all but the last row (it would prefill alone, in decode order), so 6.
  CHECK(c.reusable(keys_of(a), a, 8, 512) == 6);
  CHECK(c.reusable(keys_of(a), a, 3, 512) == 3);  // the session holds fewer rows
  RenderedPrompt b = ids(8);
  b.ids[5] = 7;
  CHECK(c.reusable(keys_of(b), b, 8, 512) == 5);
  // n_ubatch 2: 8 rows prefill as 2+2+2+2; from row 5 as 2+1 (row 7 alone): back to row 4.
  CHECK(c.reusable(keys_of(b), b, 8, 2) == 4);
  // 7 rows prefill as 2+2+2+1 (row 6 alone); from row 6 the same single row: 6 is kept.
  const RenderedPrompt seven = ids(7);
  CHECK(c.reusable(keys_of(seven), seven, 8, 2) == 6);
  c.forget_from(2);
  CHECK(c.reusable(keys_of(a), a, 8, 512) == 2);
  c.forget_from(0);
  CHECK(c.reusable(keys_of(a), a, 8, 512) == 0);
  CHECK(c.reusable(keys_of(ids(1)), ids(1), 8, 512) == 0);
}

TEST_CASE("prompt cache: a text suffix keeps positions and the whole token history") {
  const RenderedPrompt a = ids(6);
  const RenderedPrompt s = prompt_suffix(a, 4);
  REQUIRE(s.bridge);
  CHECK(s.rows() == 2);
  CHECK(s.bridge->batch.token == std::vector<int32_t>{104, 105});
  CHECK(s.bridge->batch.pos[0] == graph::Position::text(4));
  CHECK(s.bridge->batch.logits == std::vector<uint8_t>{0, 1});
  REQUIRE(s.bridge->segments.size() == 1);
  CHECK(s.bridge->segments[0].first_row == 0);
  CHECK(s.bridge->segments[0].n_rows == 2);
  CHECK(s.bridge->token_ids == a.ids);
  CHECK(s.bridge->next_position == 6);
  CHECK_THROWS(prompt_suffix(a, 0));
  CHECK_THROWS(prompt_suffix(a, 6));
}
}
