#include "graph/linear_plan.h"

#include <utility>

#include "jit/planner/peak_probe.h"

namespace ckjit::graph {

LinearPlanner::LinearPlanner(topo::Machine machine, int threads, std::optional<Profile> profile,
                             std::string profile_path)
    : machine_(std::move(machine)), threads_(std::max(1, threads)), profile_(std::move(profile)),
      profile_path_(std::move(profile_path)) {}

const planner::Plan& LinearPlanner::plan(const OpShape& shape) {
  const std::string key = shape.key();
  auto it = plans_.find(key);
  if (it != plans_.end()) return it->second;
  planner::PlannerOptions opts;
  opts.max_threads = threads_;
  // Rates measured by `ckjit tune` feed the cost model too (as `ckjit plan` does).
  if (profile_ && profile_->peaks)
    opts.peaks = planner::apply_measured(planner::default_peak_rates(machine_), *profile_->peaks);
  // Only entries the JIT runner measured describe the kernels the decoder runs.
  const ProfileEntry* entry = nullptr;
  if (profile_)
    for (const ProfileEntry& e : profile_->entries)
      if (e.shape == shape && e.runner.rfind("jit", 0) == 0) entry = &e;
  std::string skipped;
  if (entry && entry->best.tiling.threads > threads_) {
    skipped = "profile entry not used: it wants " + std::to_string(entry->best.tiling.threads) +
              " threads, the run has " + std::to_string(threads_);
    entry = nullptr;
  }
  planner::Plan p = planner::plan_with_profile(shape, machine_, entry, profile_path_, opts);
  if (!skipped.empty()) p.reasons.insert(p.reasons.begin(), skipped);
  order_.push_back(key);
  return plans_.emplace(key, std::move(p)).first->second;
}

void LinearPlanner::note_fallback(const OpShape& shape, const std::string& why) { fallbacks_[shape.key()] = why; }

std::vector<std::string> LinearPlanner::report() const {
  std::vector<std::string> lines;
  for (const std::string& key : order_) {
    const planner::Plan& p = plans_.at(key);
    std::string line = key + ": " + p.tiling.describe() + " [" + (from_profile(p) ? "profile" : "cost model") + "]";
    if (!p.reasons.empty() && p.reasons.front().rfind("profile entry not used", 0) == 0) line += " (" + p.reasons.front() + ")";
    auto fb = fallbacks_.find(key);
    if (fb != fallbacks_.end()) line += " -- not used: " + fb->second;
    lines.push_back(line);
  }
  return lines;
}

}  // namespace ckjit::graph
