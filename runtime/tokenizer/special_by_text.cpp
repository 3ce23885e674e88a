#include "runtime/tokenizer/special_by_text.h"

#include <algorithm>
#include <initializer_list>

namespace ckjit::tok {
namespace {

using Texts = std::initializer_list<std::string_view>;

// Token texts llama.cpp looks for (facts from llama-vocab.cpp at the pinned version).
const Texts kEot = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
                    "<EOT>", "_<EOT>", "[EOT]", "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>",
                    "<end_of_utterance>"};
const Texts kEom = {"<|eom_id|>"};
const Texts kFimPre = {"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "begin\xEF\xBD\x9C>",
                       "<PRE>", "\xE2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"};
const Texts kFimSuf = {"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81hole\xEF\xBD\x9C>",
                       "<SUF>", "\xE2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"};
const Texts kFimMid = {"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xEF\xBD\x9C" "fim\xE2\x96\x81" "end\xEF\xBD\x9C>",
                       "<MID>", "\xE2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"};
// FIM pad / repo / separator are also end-of-generation tokens.
const Texts kFimPad = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"};
const Texts kFimRep = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"};
const Texts kFimSep = {"<|file_sep|>"};
// Every token with one of these texts ends generation.
const Texts kEog = {"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
                    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
                    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
                    "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "[e~["};

}  // namespace

TextDetectedSpecials detect_specials_by_text(const std::function<int32_t(std::string_view)>& find_token) {
  TextDetectedSpecials out;
  auto first_of = [&](const Texts& texts) -> int32_t {
    for (std::string_view t : texts)
      if (int32_t id = find_token(t); id >= 0) return id;
    return -1;
  };
  for (const Texts* role : {&kEot, &kEom, &kFimPre, &kFimSuf, &kFimMid, &kFimPad, &kFimRep, &kFimSep}) {
    const int32_t id = first_of(*role);
    if (id < 0) continue;
    out.control.push_back(id);
    if (role == &kFimPad || role == &kFimRep || role == &kFimSep) out.eog.push_back(id);
  }
  for (std::string_view t : kEog)
    if (int32_t id = find_token(t); id >= 0) {
      out.control.push_back(id);
      out.eog.push_back(id);
    }
  for (auto* v : {&out.control, &out.eog}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
  return out;
}

}  // namespace ckjit::tok
