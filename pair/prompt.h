#pragma once
// A prompt as its parts in order — text runs and encoded images — plus the chat wrapping, rendered
// for a model at a position: token ids for a text prompt, or the bridge's mixed batch (image rows,
// M-RoPE positions, deepstack) when it holds images. Images go to the text's media markers
// (CKJIT_MEDIA_MARKER, "<__media__>") when the text has them, else where they were added (so
// images added before the text sit at the start of the user turn, as mtmd puts them).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/bridge.h"
#include "vision/vision_model.h"

namespace ckjit::pair {

class Model;

// What a prompt renders to: exactly one of ids (no images) or bridge.
struct RenderedPrompt {
  std::vector<int32_t> ids;
  std::optional<graph::BridgePrompt> bridge;
  int64_t rows() const { return bridge ? bridge->batch.size() : int64_t(ids.size()); }
  const std::vector<int32_t>& token_ids() const { return bridge ? bridge->token_ids : ids; }
};

class Prompt {
 public:
  bool chat = false;                   // one user turn in the model's chat template
  std::optional<std::string> system;   // system message (with chat)

  void add_text(std::string text);
  // Shared, never copied: one encoded image may sit in several prompts.
  void add_image(std::shared_ptr<const vision::ImageEmbedding> rows);
  bool empty() const { return parts_.empty(); }
  size_t n_images() const { return images_.size(); }
  const std::vector<std::shared_ptr<const vision::ImageEmbedding>>& images() const { return images_; }
  void clear();

  // The text with one marker per image (where markers were not written), before any chat template.
  std::string marked_text() const;
  // Errors: as graph::build_bridge_prompt (markers and images that do not match, rows of another model).
  RenderedPrompt render(const Model& model, int64_t p0 = 0) const;

 private:
  struct Part {
    std::string text;
    bool image = false;
  };
  std::vector<Part> parts_;
  std::vector<std::shared_ptr<const vision::ImageEmbedding>> images_;
};

}  // namespace ckjit::pair
