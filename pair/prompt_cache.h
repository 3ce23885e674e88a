#pragma once
// Prefix reuse (llama-server's cache_prompt): which prompt row each of a session's first KV rows
// holds, so that a later prompt sharing a prefix with it (the same system prompt, the same page
// image) keeps those rows and prefills only the rest. A row is known by a key: its token id, or
// its image's process-unique id and row index. Only prompt rows are remembered, never generated
// ones: decode rows run in llama.cpp's vec_dot order where prefill rows do not (graph/linear.h),
// so only prefilled rows give the same bits as prefilling the prompt again.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "pair/prompt.h"

namespace ckjit::pair {

// One key per row of `rendered` (which `prompt` rendered).
std::vector<uint64_t> prompt_row_keys(const Prompt& prompt, const RenderedPrompt& rendered);

// Rows [from, rows()) of `rendered`, each at the position it had, as a bridge prompt (its segments
// cut at `from`; token_ids whole, for the sampler's repetition history). Error unless 0 < from < rows().
RenderedPrompt prompt_suffix(const RenderedPrompt& rendered, int64_t from);

class PromptCache {
 public:
  // Rows `rendered` (whose keys these are) may keep from a session holding n_past rows: the
  // common prefix, at most n_past, leaving at least the last row to run (its logits), and cut
  // where prefilling the rest computes every row as prefilling the whole prompt would (prefill
  // runs each segment in n_ubatch chunks, and a one-row chunk takes decode's order: a cut that
  // would make or unmake one moves back), so the reused prompt gives the same bits.
  int64_t reusable(const std::vector<uint64_t>& keys, const RenderedPrompt& rendered, int64_t n_past, int64_t n_ubatch) const;
  // The session's first keys.size() rows hold these prompt rows (once prefilled).
  void remember(std::vector<uint64_t> keys) { keys_ = std::move(keys); }
  // Rows at and above n_past are about to be written again: what they held is forgotten.
  void forget_from(int64_t n_past);
  // The keys of another session's first n rows (copied into this one).
  void copy_from(const PromptCache& o, int64_t n) {
    keys_.assign(o.keys_.begin(), o.keys_.begin() + std::min<int64_t>(n, int64_t(o.keys_.size())));
  }

 private:
  std::vector<uint64_t> keys_;
};

}  // namespace ckjit::pair
