#pragma once
// Qwen3-VL grounds in a 0-1000 grid relative to the image: boxes in the answer ("bbox_2d": [x1, y1,
// x2, y2] in JSON, or <|box_start|>(x1,y1),(x2,y2)<|box_end|>) are found and rescaled to the page's
// pixels (clamped to the page).
#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace ckjit::grounding {

struct Box {
  std::array<double, 4> grid;  // x1, y1, x2, y2 as written (0-1000)
  std::array<double, 4> px;    // in page pixels
  std::string label;           // the "label" of the same JSON object, or the text before a box marker pair
};

// Every box of text, in order, rescaled to a page of width x height pixels.
std::vector<Box> find_boxes(std::string_view text, int width, int height);

}  // namespace ckjit::grounding
