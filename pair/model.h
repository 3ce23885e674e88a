#pragma once
// The model pair as one loaded thing (as libmtmd sits above llama and clip): the text GGUF and its
// optional mmproj, the text decoder, the vision tower, the tokenizer, and what the load decided —
// the machine, the ISA target, the tuned profile, the planner's plans, the memory check. Immutable
// after load(); shared (std::shared_ptr) by any number of Contexts (pair/context.h) on any threads.
// run, xray, the C API (and so serve and ocr) all load through here.
#include <functional>
#include <mutex>
#include <string_view>
#include <memory>
#include <optional>
#include <string>

#include "graph/linear_plan.h"
#include "graph/text_model.h"
#include "topology/workers.h"
#include "jit/emit_clock.h"
#include "jit/isa_target.h"
#include "runtime/gguf/gguf_reader.h"
#include "runtime/structured/token_constraint.h"
#include "runtime/tokenizer/tokenizer.h"
#include "topology/machine.h"
#include "vision/vision_model.h"

namespace ckjit::pair {

struct LoadOptions {
  std::string model_path;
  // The projector. Empty: none, unless want_vision, when the one mmproj*.gguf beside the model that
  // fits it is taken (pair/mmproj_search.h).
  std::string mmproj_path;
  bool want_vision = false;
  std::string wanted_by;       // what asks for vision (the first image's name), for messages
  bool vision_optional = false;  // with want_vision: no mmproj*.gguf beside the model means text only
  int threads = 0;             // 0: the machine's usable CPU budget
  std::string max_isa;         // the caller's cap on top of CKJIT_MAX_ISA ("" none)
  bool use_profile = true;     // the tuned profile of this machine (`ckjit tune`), when one fits
  bool check_memory = true;    // refuse a load whose repacked weights exceed the memory available
  // The sessions the caller will open on the model, counted with the weights in that check (their
  // KV caches and activations), so a plan that cannot fit fails before anything loads. 0: none.
  // image_rows: the most rows an image gives in them (image_max_tokens); with a vision tower, each
  // session's encode of such an image is counted too (0: no images).
  struct SessionPlan {
    int count = 0;
    int64_t n_ctx = 4096, n_batch = 512;
    int64_t image_rows = 0;
  } planned_sessions;
  int64_t plan_rows = 512;     // the prefill rows the plans are made for (the contexts' n_batch)
  bool allow_jit = true;       // false: the scalar reference for every weight
  bool llama_decode_order = true, llama_prefill_order = false;  // graph::LinearSetup
  // How the vision tower multiplies (vision/vision_model.h).
  vision::VisionPrecision vision_precision = vision::VisionPrecision::f32;
  // 0 .. 1 as the load goes; may throw to cancel it.
  std::function<void(float)> progress;
  // Workers that run the repacks (and that the caller keeps for its context); null: a pool of
  // `threads` for the load alone.
  Workers* pool = nullptr;
};

struct LoadClocks {
  double open_ms = 0;        // files opened, checked, memory checked
  double repack_ms = 0;      // weights repacked, kernels generated, tokenizer built
  jit::EmitClock jit_before, jit_after;
  double total_ms() const { return open_ms + repack_ms; }
};

class Model {
 public:
  // Errors (ckjit::Error with a kind): io (a file that cannot be read), bad_model (a file that is
  // not a Qwen3-VL text GGUF or mmproj, a pair that does not fit, no mmproj or several beside the
  // model), out_of_memory, invalid_argument (a bad max_isa).
  static std::shared_ptr<const Model> load(const LoadOptions& o);
  ~Model();

  const std::string& model_path() const { return model_path_; }
  const std::string& mmproj_path() const { return mmproj_path_; }  // "" without vision
  // "mmproj: found X beside the model" when it was searched for; "" otherwise.
  const std::string& mmproj_note() const { return mmproj_note_; }
  const gguf::GgufFile& text_file() const { return *file_; }
  const gguf::GgufFile* mmproj_file() const { return mmproj_ ? &*mmproj_ : nullptr; }
  const graph::TextModel& text() const { return *text_; }
  const graph::Hparams& hparams() const { return text_->hparams(); }
  const vision::VisionModel* vision() const { return vision_.get(); }
  const tok::Tokenizer& tokenizer() const { return *tok_; }
  const topo::Machine& machine() const { return machine_; }  // isa: the target's
  const jit::IsaTarget& isa() const { return isa_; }
  int threads() const { return threads_; }
  int64_t plan_rows() const { return plan_rows_; }
  const std::string& profile_note() const { return profile_note_; }  // describe_profile_load()
  const graph::LinearPlanner* planner() const { return planner_.get(); }
  const LoadClocks& clocks() const { return clocks_; }
  // Structured output: a JSON Schema (runtime/structured/json_schema.h) compiled against this
  // model's vocabulary, whose byte strings are sorted once, on first use. Error invalid_argument
  // for a schema outside the subset. source names it in messages ("json_schema", a file name).
  std::shared_ptr<const structured::Grammar> json_grammar(std::string_view schema, const std::string& source) const;
  // ... and a GBNF grammar (runtime/structured/gbnf.h).
  std::shared_ptr<const structured::Grammar> gbnf_grammar(std::string_view gbnf, const std::string& source) const;

 private:
  Model() = default;
  std::string model_path_, mmproj_path_, mmproj_note_, profile_note_;
  topo::Machine machine_;
  jit::IsaTarget isa_;
  int threads_ = 1;
  int64_t plan_rows_ = 512;
  std::optional<gguf::GgufFile> file_, mmproj_;
  std::unique_ptr<graph::LinearPlanner> planner_;
  std::unique_ptr<graph::TextModel> text_;
  std::unique_ptr<vision::VisionModel> vision_;
  std::unique_ptr<tok::Tokenizer> tok_;
  LoadClocks clocks_;
  mutable std::once_flag token_bytes_once_;
  mutable std::shared_ptr<const structured::TokenBytes> token_bytes_;
  std::shared_ptr<const structured::Grammar> grammar_of(structured::Dfa dfa, const std::string& source) const;
};

}  // namespace ckjit::pair
