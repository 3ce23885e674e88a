#pragma once
// Log probabilities of generated tokens for OpenAI's `logprobs` / `top_logprobs`: the model's own
// distribution (a log-softmax of the logits the token was drawn from, before temperature,
// penalties, biases or a grammar change them), as OpenAI reports it.
#include <cstdint>
#include <string>
#include <vector>

#include "include/ckjit.h"

namespace ckjit::serve {

struct TokenAlternative {
  std::string bytes;  // the token's piece, raw bytes (may be part of a UTF-8 character)
  float logprob = 0;
};

struct TokenLogprob {
  TokenAlternative chosen;
  std::vector<TokenAlternative> top;  // the most likely tokens, best first
  size_t text_start = 0, text_end = 0;  // where the token's text lies in the generated text
};

// The chosen token's log probability and the top_n most likely tokens (ties: the lower id first).
TokenLogprob token_logprob(const ckjit_model* model, const float* logits, int32_t n_vocab, int32_t token, int top_n);

}  // namespace ckjit::serve
