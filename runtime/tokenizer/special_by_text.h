// llama.cpp recognises some special tokens by their text when it loads a vocab (llama-vocab.cpp,
// "auto-detect special tokens by text"): end-of-turn and fill-in-the-middle tokens, and a list of
// end-of-generation texts. A match that is not typed CONTROL in the file is turned into one, which
// changes tokenization (then matched only with parse_special) and detokenization (hidden unless
// special). In the Qwen vocabulary this hits the ordinary token "</s>" (id 128247).
#pragma once
#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

namespace ckjit::tok {

struct TextDetectedSpecials {
  std::vector<int32_t> control;  // ids to treat as CONTROL
  std::vector<int32_t> eog;      // end-of-generation ids found by text (EOS is added by the caller)
};

// find_token: exact token text -> id or -1. For the single-token roles (EOT, EOM, FIM prefix/suffix/
// middle/pad/repo/separator) llama.cpp takes the first match in hash-map order; we take the first
// text of its list that exists, which is the same whenever at most one of them exists (true for Qwen).
TextDetectedSpecials detect_specials_by_text(const std::function<int32_t(std::string_view)>& find_token);

}  // namespace ckjit::tok
