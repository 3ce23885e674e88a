#pragma once
// Several contexts' rendered prompts generated together through one graph::Scheduler (continuous
// batching): each prompt is prefilled in chunks between the others' decode steps, and one decode
// step serves every context that is generating, reading the weights once. Each context gets what
// Context::generate gives it alone (graph/scheduler.h). The decode steps run on the first item's
// workers; each prefill on its own context's.
#include <exception>
#include <span>
#include <vector>

#include "graph/generate.h"
#include "pair/context.h"
#include "pair/prompt.h"

namespace ckjit::pair {

struct TogetherItem {
  Context* ctx;
  const RenderedPrompt* prompt;
  const graph::GenerateOptions* options;
  const graph::GenerateCallbacks* callbacks;
};

struct TogetherOutcome {
  graph::GenerateResult result;
  std::exception_ptr error;  // set when the item could not start (its prompt does not fit, ...)
};

// Errors (for the whole call): no items, contexts of different models, a context listed twice.
// An item that cannot start gets its error and the others run; an error while running (a callback
// throws) ends the call.
std::vector<TogetherOutcome> generate_together(std::span<const TogetherItem> items);

}  // namespace ckjit::pair
