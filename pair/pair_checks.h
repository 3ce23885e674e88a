#pragma once
// The checks that belong to the pair, not to either model: the mmproj's rows must be what the text
// model reads, and both models' repacked weights must fit in what the machine (and the cgroup)
// still has — so a load fails in a second with a message instead of minutes later with an OOM kill.
#include <string>

#include "graph/hparams.h"
#include "pair/model.h"
#include "runtime/gguf/gguf_reader.h"
#include "vision/vision_hparams.h"
#include "vision/vision_model.h"

namespace ckjit::pair {

// D = n_embd and as many deepstack slices as the decoder adds; Error (bad_model) naming both
// files otherwise.
void check_pair(const vision::VisionHparams& v, const std::string& mmproj_name, const graph::Hparams& text,
                const std::string& model_name);

// Error (io) "cannot open WHAT 'PATH'" for a file this process cannot read.
void require_readable(const std::string& path, const char* what);

// Error (out_of_memory) "not enough memory for the model's weights ..." when they, with the KV
// caches and activations of plan.count sessions of n_ctx (at n_batch rows) and, with a vision tower,
// each session's encode of an image of plan.image_rows rows, do not fit; the message names every
// figure and the parameters that lower them. mmproj and vhp may be null (no vision tower).
void require_load_memory(const gguf::GgufFile& text, const graph::Hparams& hp, const gguf::GgufFile* mmproj,
                         const vision::VisionHparams* vhp, vision::VisionPrecision precision, const LoadOptions::SessionPlan& plan);

}  // namespace ckjit::pair
