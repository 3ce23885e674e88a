#pragma once
// The library's parameters as the CLI's flags, for library messages that name a remedy
// (runtime/error.h: "raise $n_ctx" prints as "raise -c").
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

}  // namespace ckjit::cli
