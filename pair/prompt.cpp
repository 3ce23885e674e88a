#include "pair/prompt.h"

#include "graph/generate.h"
#include "pair/model.h"

namespace ckjit::pair {

void Prompt::add_text(std::string text) { parts_.push_back({std::move(text), false}); }

void Prompt::add_image(std::shared_ptr<const vision::ImageEmbedding> rows) {
  images_.push_back(std::move(rows));
  parts_.push_back({"", true});
}

void Prompt::clear() { parts_.clear(), images_.clear(); }

std::string Prompt::marked_text() const {
  bool own_markers = false;
  for (const Part& p : parts_) own_markers = own_markers || (!p.image && p.text.find(graph::kMediaMarker) != std::string::npos);
  std::string text;
  for (const Part& p : parts_) text += p.image ? (own_markers ? "" : graph::kMediaMarker) : p.text;
  return text;
}

RenderedPrompt Prompt::render(const Model& model, int64_t p0) const {
  graph::PromptOptions po;
  po.text = marked_text();
  po.chat = chat;
  po.system = system;
  RenderedPrompt out;
  if (images_.empty()) {
    out.ids = graph::prompt_tokens(model.tokenizer(), model.text_file(), po);
    return out;
  }
  std::vector<graph::ImageRows> rows;
  for (const auto& e : images_) rows.push_back({e->nx, e->ny, e->row_width, e->rows.data()});
  out.bridge = graph::build_bridge_prompt(model.tokenizer(), graph::prompt_text(model.text_file(), po), rows,
                                          model.hparams().n_embd, model.hparams().n_deepstack, p0);
  return out;
}

}  // namespace ckjit::pair
