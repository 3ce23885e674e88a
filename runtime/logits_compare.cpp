#include "runtime/logits_compare.h"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "runtime/error.h"

namespace ckjit {

StepTop step_top(std::span<const float> l) {
  StepTop t;
  int32_t second = -1;
  for (size_t i = 1; i < l.size(); ++i) {
    if (l[i] > l[size_t(t.top1)]) {
      second = t.top1;
      t.top1 = int32_t(i);
    } else if (second < 0 || l[i] > l[size_t(second)]) {
      second = int32_t(i);
    }
  }
  t.margin = second < 0 ? INFINITY : l[size_t(t.top1)] - l[size_t(second)];
  return t;
}

std::vector<std::pair<int32_t, float>> top_k_logits(std::span<const float> l, int k) {
  std::vector<int32_t> idx(l.size());
  for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t(i);
  k = std::min<int>(k, int(idx.size()));
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int32_t a, int32_t b) { return l[size_t(a)] > l[size_t(b)] || (l[size_t(a)] == l[size_t(b)] && a < b); });
  std::vector<std::pair<int32_t, float>> out;
  for (int i = 0; i < k; ++i) out.push_back({idx[size_t(i)], l[size_t(idx[size_t(i)])]});
  return out;
}

double cosine(std::span<const float> a, std::span<const float> b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += double(a[i]) * b[i];
    aa += double(a[i]) * a[i];
    bb += double(b[i]) * b[i];
  }
  return aa == 0 || bb == 0 ? (aa == bb ? 1.0 : 0.0) : ab / std::sqrt(aa * bb);
}

TrajectoryDiff compare_trajectories(std::span<const float> a, std::span<const float> b, int64_t V, float thr) {
  TrajectoryDiff d;
  d.steps = int64_t(std::min(a.size(), b.size())) / V;
  double sum = 0;
  for (int64_t s = 0; s < d.steps; ++s) {
    auto ra = a.subspan(size_t(s * V), size_t(V)), rb = b.subspan(size_t(s * V), size_t(V));
    const double c = cosine(ra, rb);
    sum += c;
    if (c < d.cos_min || s == 0) d.cos_min = c, d.cos_min_step = s;
    float step_max = 0;
    for (int64_t i = 0; i < V; ++i) step_max = std::max(step_max, std::fabs(ra[size_t(i)] - rb[size_t(i)]));
    d.max_abs = std::max(d.max_abs, step_max);
    const StepTop ta = step_top(ra), tb = step_top(rb);
    d.step_cos.push_back(c);
    d.step_max_abs.push_back(step_max);
    d.step_margin_b.push_back(tb.margin);
    d.step_top1_a.push_back(ta.top1);
    d.step_top1_b.push_back(tb.top1);
    const bool agree = ta.top1 == tb.top1;
    d.all_agree += agree;
    if (!agree) d.disagreements.push_back(s);
    if (tb.margin > thr) {
      d.clear_steps++;
      d.clear_agree += agree;
    }
  }
  d.cos_mean = d.steps ? sum / double(d.steps) : 1.0;
  return d;
}

std::vector<float> read_logits_file(const std::string& path, int64_t V) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error("cannot read logits file '" + path + "'");
  const auto bytes = int64_t(in.tellg());
  if (V <= 0 || bytes % (V * 4) != 0)
    throw Error("'" + path + "' (" + std::to_string(bytes) + " bytes) is not whole rows of " + std::to_string(V) + " floats");
  std::vector<float> out(size_t(bytes / 4));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(out.data()), bytes);
  return out;
}

}  // namespace ckjit
