#pragma once
// ckjit xray: where a run first parts from a reference. It runs the prompt (text, or one image +
// text) through ckjit with every checkpoint tapped, and through a reference on the same
// trajectory (teacher forcing on ckjit's greedy tokens):
//   - scalar: ckjit's own scalar twins of every generated kernel (jit/executor.h), in the same
//     process; tolerance 0 (the numerical contract: the twins give the same bits);
//   - llama: llama.cpp's graph nodes (peer-cli --dump-tensors), batched as llama.cpp runs a
//     prompt; the tolerance at each checkpoint is llama.cpp's own envelope there (its batched vs
//     its one-token-per-batch run).
// It reports the first logit-ranking disagreement, the last passing and first failing checkpoint
// (metric, tolerance and its source at each), and a same-input replay of the suspected op: ckjit
// runs again with every earlier checkpoint replaced by the reference's values; if the failing
// checkpoint still fails, the fault is in that op (kernel, layout or ABI; against llama.cpp: the
// op's arithmetic differs), otherwise the drift came from upstream.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "xray/compare.h"
#include "xray/runner.h"

namespace ckjit::xray {

struct XrayOptions {
  RunnerOptions run;
  int n_predict = 8;                 // greedy steps of the trajectory
  std::string reference = "scalar";  // scalar | llama
  std::string checkpoints = ".*";    // regex: which checkpoints to compare
  int64_t row_begin = 0, row_end = INT64_MAX;  // which rows (sequence positions; patches in the tower)
  std::optional<std::string> replay; // replay this checkpoint instead of the first failing one
  // llama: either peer-cli (run here, twice) or dumps recorded beforehand.
  std::string peer_cli;
  std::string llama_dump, llama_dump_serial;  // peer-cli --dump-tensors DIRs (batched; -b 1 -ub 1)
  std::string llama_embd, llama_embd_serial;  // their --dump-embd files (image runs)
  std::string work_dir;                       // where peer-cli's dumps go (default: a temp dir)
  bool keep_dumps = false;
};

struct ReplayResult {
  bool ran = false;
  std::string checkpoint, op, weight;
  CheckpointResult result;
  size_t overrides = 0;     // reference rows fed in
  std::string conclusion;
};

struct XrayReport {
  std::string machine, model, reference, tolerance_source;
  std::vector<int32_t> trajectory;
  int64_t n_rows = 0;
  std::vector<CheckpointResult> checkpoints;
  RankingDisagreement ranking;
  std::optional<size_t> last_passing, first_failing;  // indexes into checkpoints
  ReplayResult replay;
  std::vector<std::string> notes;
  bool diverged() const { return first_failing.has_value(); }
};

XrayReport run_xray(const XrayOptions& o);
std::vector<std::string> report_text(const XrayReport& r);
std::string report_json(const XrayReport& r);

// Error unless the regex matches at least one checkpoint of this model (naming valid forms).
void check_checkpoint_filter(const std::string& regex, const std::vector<std::string>& valid);

}  // namespace ckjit::xray
