#pragma once
// The bridge between the vision side and the decoder (spec/qwen3vl.md A.5, D.2, D.4): a prompt
// with media markers (where the images go) becomes one mixed Batch; graph::generate prefills it
// one segment after another so the image rows' time is known (Session::decode also takes it whole). Text is cut at the
// media marker `<__media__>` (as mtmd does; with no marker every image goes first) and each
// piece is tokenized with special tokens parsed; each image becomes <|vision_start|>, its
// projector rows as embedding rows, <|vision_end|>. Positions follow llama.cpp: the image starting
// at p0 has t = p0, h = p0 + i / nx, w = p0 + i % nx for row i (raster order), and the text after
// it resumes at p0 + max(nx, ny). Each projector row is [main (E) | deepstack 0 .. n-1 (E each)]:
// the main slice replaces the pad embedding, the rest are the row's deepstack slices.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/batch.h"
#include "runtime/tokenizer/tokenizer.h"

namespace ckjit::graph {

inline constexpr const char* kMediaMarker = "<__media__>";

// The user's text as mtmd's tools template it: without a marker, one per image is put in front of
// it, before any chat template, so that the images sit inside the user turn (after
// "<|im_start|>user\n", not before the whole template). Text with markers is returned unchanged.
std::string with_media_markers(const std::string& user_text, size_t n_images);

// One image's projector output: nx * ny rows of row_width floats, raster order of the merged grid.
struct ImageRows {
  int nx = 0, ny = 0;
  int64_t row_width = 0;       // n_embd * (1 + n_deepstack)
  const float* rows = nullptr; // borrowed: must outlive the batch
};

// What the prefix looks like: one entry per text run or image, for `--report` / -v.
struct BridgeSegment {
  bool image = false;
  int64_t first_row = 0, n_rows = 0;  // rows of the batch
  Position first, last;               // positions of its first and last row
};

struct BridgePrompt {
  Batch batch;                        // logits wanted for the last row only
  std::vector<BridgeSegment> segments;
  std::vector<int32_t> token_ids;     // per row: the token id, or -1 for an image row (as mtmd reports)
  int64_t next_position = 0;          // where decoding continues
};

// Errors: fewer or more markers than images, a row width that is not n_embd * (1 + n_deepstack),
// an empty grid, missing special tokens in the vocabulary.
BridgePrompt build_bridge_prompt(const tok::Tokenizer& tok, const std::string& text, const std::vector<ImageRows>& images,
                                 int64_t n_embd, int64_t n_deepstack, int64_t p0 = 0);

// One line per segment: "text rows 0-3 pos 0-3", "image 12 rows (4 x 3) pos t=4 h=4-6 w=4-7, deepstack 3".
std::vector<std::string> describe_bridge(const BridgePrompt& p, int64_t n_deepstack);

}  // namespace ckjit::graph
