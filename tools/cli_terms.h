#pragma once
// The library's parameters as the CLI's flags, for library messages that name a remedy
// (runtime/error.h: "raise $n_ctx" prints as "raise -c").
#include <cctype>
#include <string>

#include "runtime/error.h"

namespace ckjit::cli {

inline std::string flag_term(const std::string& param) {
  static const struct { const char *param, *flag; } table[] = {
      {"n_ctx", "-c"}, {"n_batch", "-b"}, {"n_threads", "-t"}, {"image_min_tokens", "--image-min-tokens"},
      {"image_max_tokens", "--image-max-tokens"}, {"mmproj", "--mmproj"}, {"max_isa", "CKJIT_MAX_ISA"},
      {"no_memory_check", "--no-memory-check"}, {"prompt", "-p TEXT or -f FILE"}, {"forced", "--force"},
      {"repeat_penalty", "--repeat-penalty"}, {"top_p", "--top-p"}, {"min_p", "--min-p"}, {"logit_bias", "--logit-bias"},
      {"frequency_penalty", "--frequency-penalty"}, {"presence_penalty", "--presence-penalty"}, {"n_sessions", "--parallel"}};
  for (const auto& t : table)
    if (param == t.param) return t.flag;
  return "";
}

inline std::string in_flag_terms(const Error& e) { return e.in_terms(flag_term); }

// A C API message (which names parameters: "raise n_ctx") in the CLI's terms ("raise -c"): each
// parameter of the table that stands as a word.
inline std::string text_in_flag_terms(std::string text) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; };
  for (size_t i = 0; i < text.size(); ++i) {
    if (!word(text[i]) || (i > 0 && word(text[i - 1]))) continue;
    size_t j = i;
    while (j < text.size() && word(text[j])) ++j;
    const std::string flag = flag_term(text.substr(i, j - i));
    if (!flag.empty()) text.replace(i, j - i, flag), j = i + flag.size();
    i = j;
  }
  return text;
}

}  // namespace ckjit::cli
