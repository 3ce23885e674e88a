#pragma once
// What `ckjit run` reads without -m (the embedded default):
// - the trained tiny OCR pair of assets/tiny-ocr (tools/train_tiny_ocr: a compact text file expanded
//   once into the user cache, a Q8_0 mmproj) reading its sample page, whose text is stored beside it;
// - else, or when CKJIT_DEFAULT_PRESET names a preset, a synthesized random-weight pair (2B-shaped
//   unless that variable says otherwise; tests use tiny) reading assets/sample-page.png: its text is
//   noise by construction, it shows the pipeline and the time of each phase.
#include <optional>
#include <string>

namespace ckjit::cli {

struct DefaultPair {
  std::string model, mmproj, page;
  std::string preset;      // the random pair's preset; empty for the trained pair
  std::string page_text;   // the trained pair's sample page: its ground truth
};

// The trained pair when assets/tiny-ocr (or CKJIT_TRAINED_DIR) holds it and CKJIT_DEFAULT_PRESET is
// unset; else the random pair. Writes what it makes (once) into the user cache dir.
DefaultPair default_pair();

// Character error rate: edit distance over Unicode code points / length of the reference.
double char_error_rate(const std::string& hypothesis, const std::string& reference);

}  // namespace ckjit::cli
