#include "pair/generate_together.h"

#include <algorithm>

#include "graph/scheduler.h"
#include "runtime/error.h"

namespace ckjit::pair {

std::vector<TogetherOutcome> generate_together(std::span<const TogetherItem> items) {
  if (items.empty()) throw Error("generate together: no sessions", ErrorKind::invalid_argument);
  const Model& model = items[0].ctx->model();
  int64_t scratch = 0;
  for (size_t i = 0; i < items.size(); ++i) {
    if (&items[i].ctx->model() != &model) throw Error("generate together: the sessions are of different models", ErrorKind::invalid_argument);
    for (size_t j = 0; j < i; ++j)
      if (items[j].ctx == items[i].ctx) throw Error("generate together: a session is listed twice", ErrorKind::invalid_argument);
    scratch = std::max(scratch, items[i].ctx->session().attention_scratch_per_worker());
  }
  graph::Scheduler sched(model.text(), model.tokenizer(), int64_t(items.size()), scratch, items[0].ctx->pool());
  std::vector<TogetherOutcome> out(items.size());
  std::vector<int> ids(items.size(), -1);
  for (size_t i = 0; i < items.size(); ++i) {
    const TogetherItem& it = items[i];
    try {
      graph::Session& s = it.ctx->session();
      ids[i] = it.prompt->bridge ? sched.add(s, *it.prompt->bridge, *it.options, *it.callbacks)
                                 : sched.add(s, it.prompt->ids, *it.options, *it.callbacks);
    } catch (...) {
      out[i].error = std::current_exception();
    }
  }
  sched.run();
  for (size_t i = 0; i < items.size(); ++i)
    if (ids[i] >= 0) out[i].result = sched.result(ids[i]);
  return out;
}

}  // namespace ckjit::pair
