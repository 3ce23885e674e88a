// The OCR record's helpers: boxes in Qwen3-VL's 0-1000 grid rescaled to page pixels, and the guard
// that stops a page caught in a loop.
#include <doctest/doctest.h>

#include <vector>

#include "runtime/grounding.h"
#include "runtime/repetition_guard.h"

using namespace ckjit;

TEST_CASE("grounding: bbox_2d boxes and box markers are rescaled from the 0-1000 grid to page pixels" * doctest::test_suite("ocr")) {
  const std::string text = R"(```json
[{"bbox_2d": [100, 200, 500, 1000], "label": "title"}, {"label": "total", "bbox_2d":[0,0, 1000 ,500]},
 {"bbox_2d": [1, 2, 3]}, {"bbox_2d": [-50, 10, 1200, 20.5]}]
``` and <|object_ref_start|>stamp<|object_ref_end|><|box_start|>(250,250),(750,500)<|box_end|>)";
  const auto boxes = grounding::find_boxes(text, 800, 600);
  REQUIRE(boxes.size() == 4);  // the three-number box is not one
  CHECK(boxes[0].label == "title");
  CHECK(boxes[0].px == std::array<double, 4>{80, 120, 400, 600});
  CHECK(boxes[1].label == "total");
  CHECK(boxes[1].px == std::array<double, 4>{0, 0, 800, 300});
  CHECK(boxes[2].grid == std::array<double, 4>{-50, 10, 1200, 20.5});
  CHECK(boxes[2].px == std::array<double, 4>{0, 6, 800, 12.3});  // clamped to the page
  CHECK(boxes[2].label == "");
  CHECK(boxes[3].label == "stamp");
  CHECK(boxes[3].px == std::array<double, 4>{200, 150, 600, 300});
  CHECK(grounding::find_boxes("no boxes here \"bbox_2d\": [1,2", 10, 10).empty());
}

TEST_CASE("repetition guard: a unit repeated past the limit fires and varied text or short runs do not" * doctest::test_suite("ocr")) {
  auto first_fire = [](const std::vector<int32_t>& ids, int repeats, int span) {
    RepetitionGuard g(repeats, span);
    for (size_t i = 0; i < ids.size(); ++i)
      if (g.push(ids[i])) return int(i);
    return -1;
  };
  std::vector<int32_t> text;
  for (int i = 0; i < 200; ++i) text.push_back(i * 7919 % 1000);  // no period up to 64
  CHECK(first_fire(text, 8, 32) == -1);
  std::vector<int32_t> loop = text;
  const std::vector<int32_t> line{5, 6, 7, 8, 9};  // one line of 5 tokens, again and again
  for (int r = 0; r < 20; ++r) loop.insert(loop.end(), line.begin(), line.end());
  // 8 copies = 40 tokens >= 32: fires at the last token of the 8th copy.
  CHECK(first_fire(loop, 8, 32) == 200 + 8 * 5 - 1);
  RepetitionGuard g(8, 32);
  for (size_t i = 0; i < loop.size() && !g.push(loop[i]);) ++i;
  CHECK(g.unit() == 5);
  // One token repeated: the span (32) decides, not the count of 8.
  std::vector<int32_t> dashes(40, 3);
  CHECK(first_fire(dashes, 8, 32) == 31);
  CHECK(first_fire(dashes, 0, 32) == -1);  // off
  std::vector<int32_t> short_run(20, 3);
  CHECK(first_fire(short_run, 8, 32) == -1);
}
