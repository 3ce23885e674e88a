#include "xray/xray.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "runtime/checkpoints.h"
#include "runtime/error.h"
#include "runtime/json.h"
#include "topology/machine.h"
#include "xray/peer_run.h"

namespace ckjit::xray {

namespace {

std::string escape_regex(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) out += '\\';
    out += c;
  }
  return out;
}

std::vector<TapRecord> keep_matching(std::vector<TapRecord> v, const std::string& regex) {
  const std::regex re(regex, std::regex::ECMAScript);
  std::vector<TapRecord> out;
  for (auto& r : v)
    if (std::regex_match(r.name, re)) out.push_back(std::move(r));
  return out;
}


std::string fmt(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", x);
  return b;
}

std::string describe(const CheckpointResult& c) {
  if (c.verdict == Verdict::not_compared) return c.name + ": not compared (" + c.why + ")";
  std::string s = c.name + ": " + verdict_name(c.verdict) + ", rel L2 " + fmt(c.distance) + (c.bit_identical ? " (bit-identical)" : "") +
                  ", max |d| " + fmt(c.max_abs) + " (worst row " + std::to_string(c.worst_row) + ", " + std::to_string(c.rows) +
                  " rows), tolerance " + fmt(c.tolerance);
  if (c.other_distance)
    s += "; vs the one-token run: rel L2 " + fmt(*c.other_distance) + (c.other_identical ? " (bit-identical)" : "");
  return s;
}

}  // namespace

void check_checkpoint_filter(const std::string& regex, const std::vector<std::string>& valid) {
  std::regex re;
  try {
    re = std::regex(regex, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error("--checkpoints '" + regex + "' is not a valid regular expression (" + e.what() + ")");
  }
  for (const auto& n : valid)
    if (std::regex_match(n, re)) return;
  throw Error("--checkpoints '" + regex + "' matches no checkpoint of this model; names are " + valid.front() + " ... " +
              valid.back() + " (L<layer>.attn_norm|q|k|v|q_normed|k_normed|q_roped|k_roped|attn_out|attn_residual|ffn_norm|"
              "ffn_act|l_out|deepstack_out, final_norm, logits; with an image V.patch_embd, V.pos_embd, "
              "V<layer>.ln1|qkv|q_roped|k_roped|attn|attn_residual|ln2|ffn_act|block_out, V.deepstack<k>, V.merger)");
}

XrayReport run_xray(const XrayOptions& o) {
  if (o.reference != "scalar" && o.reference != "llama")
    throw Error("--reference must be scalar (ckjit's scalar twins) or llama (llama.cpp's graph), not '" + o.reference + "'");
  if (o.n_predict < 1) throw Error("-n must be at least 1 (the trajectory needs one logits row)");
  Runner runner(o.run);
  const graph::Hparams& hp = runner.model().hparams();
  const std::vector<std::string> valid = checkpoint_names(hp.n_layer, hp.n_deepstack, runner.n_vision_layers());
  check_checkpoint_filter(o.checkpoints, valid);
  if (o.replay && std::find(valid.begin(), valid.end(), *o.replay) == valid.end())
    throw Error("--replay " + *o.replay + ": no such checkpoint in this model (" + std::to_string(valid.size()) +
                " checkpoints, " + valid.front() + " ... " + valid.back() + ")");

  XrayReport rep;
  rep.machine = topo::this_machine().name();
  rep.model = o.run.model;
  // The candidate: ckjit as it runs, greedy; its tokens are the trajectory every other run is forced on.
  Tap cand_tap(TapFilter{o.checkpoints, o.row_begin, o.row_end});
  const RunResult cr = runner.run(jit::Executor::generated, {}, o.n_predict, cand_tap);
  rep.trajectory = cr.generated;
  rep.n_rows = cr.n_rows;
  const std::vector<TapRecord> cand = cand_tap.take();
  {
    // Said before any reference runs, so that a refused reference does not lose the run.
    std::string ids;
    for (int32_t id : rep.trajectory) ids += " " + std::to_string(id);
    std::fprintf(stderr, "xray: ckjit ran %lld rows, %zu checkpoints; trajectory:%s\n", (long long)rep.n_rows, cand.size(), ids.c_str());
  }

  std::vector<TapRecord> ref;
  Tolerances tol;
  if (o.reference == "scalar") {
    rep.reference = "ckjit scalar twins (jit/reference.h; same process, same trajectory)";
    Tap ref_tap(TapFilter{o.checkpoints, o.row_begin, o.row_end});
    runner.run(jit::Executor::scalar_twins, rep.trajectory, o.n_predict, ref_tap);
    ref = ref_tap.take();
    tol.exact = true;
    tol.source = "0: bit-identical (the numerical contract: the twins keep the kernels' float order)";
    rep.notes.push_back("ops without a generated kernel (norms, RoPE, attention, the vision attention) run the same code "
                        "under both executors: bit-identical there shows the kernels' inputs agree, not a second implementation");
  } else {
    rep.reference = "llama.cpp (peer-cli graph dump, batched prompt)";
    const DumpShape shape = runner.shape(cr);
    LlamaDumps d;
    if (!o.llama_dump.empty()) {
      d = {o.llama_dump, o.llama_dump_serial, o.llama_embd, o.llama_embd_serial, ""};
      check_recorded_trajectory(d, rep.trajectory);
      if (d.serial.empty())
        rep.notes.push_back("no one-token-per-batch dump given (--llama-dump-serial): no envelope, so nothing can be judged");
    } else {
      d = record_llama_dumps(o, rep.trajectory, !o.run.image.empty());
    }
    ref = keep_matching(read_llama_dump(d.batched, shape), o.checkpoints);
    if (!d.embd.empty()) for (auto& r : keep_matching(read_llama_embd(d.embd, shape), o.checkpoints)) ref.push_back(std::move(r));
    tol.envelope_a = ref;
    if (!d.serial.empty()) {
      tol.envelope_b = keep_matching(read_llama_dump(d.serial, shape), o.checkpoints);
      if (!d.embd_serial.empty())
        for (auto& r : keep_matching(read_llama_embd(d.embd_serial, shape), o.checkpoints)) tol.envelope_b.push_back(std::move(r));
    }
    tol.source = "llama.cpp's envelope at this checkpoint: its batched prompt vs its one-token-per-batch prompt (same metric)";
    if (!o.keep_dumps && o.llama_dump.empty() && o.work_dir.empty()) remove_llama_dumps(d);
  }
  rep.tolerance_source = tol.source;
  rep.checkpoints = compare_runs(cand, ref, tol);
  if (const TapRecord* a = find_record(cand, "logits"))
    if (const TapRecord* b = find_record(ref, "logits")) rep.ranking = first_ranking_disagreement(*a, *b);

  for (size_t i = 0; i < rep.checkpoints.size(); ++i) {
    if (rep.checkpoints[i].verdict == Verdict::failed) {
      rep.first_failing = i;
      break;
    }
    if (rep.checkpoints[i].verdict == Verdict::passed) rep.last_passing = i;
  }

  // Same-input replay: every checkpoint before the suspect takes the reference's values.
  const std::optional<std::string> target =
      o.replay ? o.replay : rep.first_failing ? std::optional(rep.checkpoints[*rep.first_failing].name) : std::nullopt;
  if (target) {
    ReplayResult& rr = rep.replay;
    rr.ran = true;
    rr.checkpoint = *target;
    rr.op = checkpoint_op(*target);
    rr.weight = runner.weight_of(*target);
    Tap rep_tap(TapFilter{"^" + escape_regex(*target) + "$", o.row_begin, o.row_end});
    bool before = true;
    for (const TapRecord& c : cand) {
      if (c.name == *target) before = false;
      if (!before) break;
      if (const TapRecord* r = find_record(ref, c.name)) rep_tap.set_override(*r);
    }
    if (before) throw Error("--replay " + *target + ": the run did not reach it (not tapped: check --checkpoints)");
    runner.run(jit::Executor::generated, rep.trajectory, o.n_predict, rep_tap);
    rr.overrides = rep_tap.overrides_applied();
    const std::vector<CheckpointResult> res = compare_runs(rep_tap.take(), ref, tol);
    if (!res.empty()) rr.result = res.front();
    const std::string what = rr.op + (rr.weight.empty() ? "" : " (" + rr.weight + ")");
    if (rr.result.verdict == Verdict::failed)
      rr.conclusion = o.reference == "scalar"
                          ? "replay fails: a kernel, layout or ABI fault in " + what + " — it differs from its scalar twin on the same input"
                          : "replay fails: ckjit's " + what + " on llama.cpp's own inputs differs from llama.cpp's by more than llama.cpp's "
                            "envelope — the two runtimes' arithmetic for this op parts here";
    else if (rr.result.verdict == Verdict::passed)
      rr.conclusion = "replay passes: on the reference's inputs " + what +
                      " agrees within tolerance — the difference here came from upstream (its inputs already differed: "
                      "drift propagated, not a fault of this op)";
    else
      rr.conclusion = "replay not judged: " + rr.result.why;
  }
  return rep;
}

std::vector<std::string> report_text(const XrayReport& r) {
  std::vector<std::string> out;
  out.push_back("machine: " + r.machine);
  out.push_back("reference: " + r.reference);
  out.push_back("tolerance: " + r.tolerance_source);
  std::string traj;
  for (size_t i = 0; i < r.trajectory.size(); ++i) traj += (i ? " " : "") + std::to_string(r.trajectory[i]);
  out.push_back("trajectory: " + std::to_string(r.trajectory.size()) + " tokens (" + traj + "), " + std::to_string(r.n_rows) + " rows");
  const RankingDisagreement& k = r.ranking;
  if (k.steps_compared == 0) out.push_back("logit ranking: not compared (no logits in both runs)");
  else if (k.step < 0) out.push_back("logit ranking: the same top-5 order at all " + std::to_string(k.steps_compared) + " steps");
  else
    out.push_back("first logit-ranking disagreement: step " + std::to_string(k.step) + " (row " + std::to_string(k.position) +
                  "), rank " + std::to_string(k.k) + " of the top-5 differs; top-1 ckjit " + std::to_string(k.top1_candidate) +
                  " vs reference " + std::to_string(k.top1_reference));
  int passed = 0, failed = 0, nc = 0;
  for (const auto& c : r.checkpoints) (c.verdict == Verdict::passed ? passed : c.verdict == Verdict::failed ? failed : nc)++;
  out.push_back("checkpoints: " + std::to_string(r.checkpoints.size()) + " (" + std::to_string(passed) + " passed, " +
                std::to_string(failed) + " failed, " + std::to_string(nc) + " not compared)");
  out.push_back("last passing: " + (r.last_passing ? describe(r.checkpoints[*r.last_passing]) : std::string("none")));
  if (!r.first_failing) out.push_back("first failing: none — no divergence");
  else
    out.push_back("first failing: " + describe(r.checkpoints[*r.first_failing]) + "; op: " + checkpoint_op(r.checkpoints[*r.first_failing].name));
  if (r.replay.ran) {
    out.push_back("replay of " + r.replay.checkpoint + " on the reference's inputs (" + std::to_string(r.replay.overrides) +
                  " rows fed): " + describe(r.replay.result));
    out.push_back("verdict: " + r.replay.conclusion);
  } else {
    out.push_back("verdict: no divergence" + std::string(r.checkpoints.empty() ? " (nothing compared)" : ""));
  }
  for (const auto& n : r.notes) out.push_back("note: " + n);
  return out;
}

std::string report_json(const XrayReport& r) {
  auto checkpoint = [](const CheckpointResult& c) {
    OrderedJson j = {{"name", c.name}, {"verdict", std::string(verdict_name(c.verdict))}};
    if (c.verdict == Verdict::not_compared) {
      j["why"] = c.why;
    } else {
      j["rel_l2"] = c.distance, j["max_abs"] = c.max_abs, j["worst_row"] = c.worst_row, j["rows"] = c.rows;
      j["bit_identical"] = c.bit_identical, j["tolerance"] = c.tolerance;
    }
    if (c.other_distance) j["rel_l2_vs_one_token_run"] = *c.other_distance, j["bit_identical_to_one_token_run"] = c.other_identical;
    j["op"] = checkpoint_op(c.name);
    return j;
  };
  OrderedJson j = {{"machine", r.machine}, {"model", r.model}, {"reference", r.reference}, {"tolerance_source", r.tolerance_source},
                   {"trajectory", r.trajectory}, {"rows", r.n_rows}};
  OrderedJson& ranking = j["ranking"] = {{"steps_compared", r.ranking.steps_compared}};
  if (r.ranking.step >= 0) {
    ranking["first_step"] = r.ranking.step, ranking["row"] = r.ranking.position, ranking["rank"] = r.ranking.k;
    ranking["top1_ckjit"] = r.ranking.top1_candidate, ranking["top1_reference"] = r.ranking.top1_reference;
  }
  j["diverged"] = r.diverged();
  j["last_passing"] = r.last_passing ? checkpoint(r.checkpoints[*r.last_passing]) : OrderedJson(nullptr);
  j["first_failing"] = r.first_failing ? checkpoint(r.checkpoints[*r.first_failing]) : OrderedJson(nullptr);
  if (r.replay.ran)
    j["replay"] = {{"checkpoint", r.replay.checkpoint}, {"op", r.replay.op}, {"weight", r.replay.weight},
                   {"rows_fed", r.replay.overrides}, {"conclusion", r.replay.conclusion}, {"result", checkpoint(r.replay.result)}};
  else
    j["replay"] = nullptr;
  OrderedJson& cps = j["checkpoints"] = OrderedJson::array();
  for (const auto& c : r.checkpoints) cps.push_back(checkpoint(c));
  j["notes"] = r.notes;
  return dump_json(j);
}

}  // namespace ckjit::xray
