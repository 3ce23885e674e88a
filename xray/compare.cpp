#include "xray/compare.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

namespace ckjit::xray {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::passed: return "passed";
    case Verdict::failed: return "failed";
    default: return "not compared";
  }
}

Distance distance(const TapRecord& a, const TapRecord& b) {
  Distance d;
  if (a.cols != b.cols) return d;
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const int64_t j = b.find_row(a.rows[i]);
    if (j < 0) continue;
    const float* x = a.row(i);
    const float* y = b.row(size_t(j));
    double num = 0, den = 0;
    for (int64_t c = 0; c < a.cols; ++c) {
      const double e = double(x[c]) - double(y[c]);
      num += e * e, den += double(y[c]) * double(y[c]);
      d.max_abs = std::max(d.max_abs, std::fabs(e));
      d.identical = d.identical && std::memcmp(&x[c], &y[c], 4) == 0;
    }
    // A zero reference row: the distance is the candidate's own norm.
    const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
    if (d.worst_row < 0 || rel > d.rel) d.rel = rel, d.worst_row = a.rows[i];
    ++d.rows;
  }
  if (d.rows == 0) d.identical = false;
  return d;
}

std::vector<CheckpointResult> compare_runs(const std::vector<TapRecord>& candidate, const std::vector<TapRecord>& reference,
                                           const Tolerances& tol) {
  std::vector<CheckpointResult> out;
  for (const TapRecord& c : candidate) {
    CheckpointResult r;
    r.name = c.name;
    r.tolerance_source = tol.source;
    const TapRecord* ref = find_record(reference, c.name);
    if (!ref) {
      r.why = "the reference has no such node";
      out.push_back(r);
      continue;
    }
    if (ref->cols != c.cols) {
      r.why = "widths differ (" + std::to_string(c.cols) + " vs " + std::to_string(ref->cols) + ")";
      out.push_back(r);
      continue;
    }
    const Distance d = distance(c, *ref);
    if (d.rows == 0) {
      r.why = "no rows in common";
      out.push_back(r);
      continue;
    }
    r.distance = d.rel, r.max_abs = d.max_abs, r.worst_row = d.worst_row, r.rows = d.rows, r.bit_identical = d.identical;
    if (tol.exact) {
      r.tolerance = 0;
      r.verdict = d.identical ? Verdict::passed : Verdict::failed;
    } else {
      const TapRecord* ea = find_record(tol.envelope_a, c.name);
      const TapRecord* eb = find_record(tol.envelope_b, c.name);
      Distance e;
      // Oriented like the candidate's distance: the other run against the reference run.
      if (ea && eb) e = distance(*eb, *ea);
      if (!ea || !eb || e.rows == 0) {
        r.why = "no envelope measured here (the two reference runs do not both hold it)";
        out.push_back(r);
        continue;
      }
      r.tolerance = e.rel;
      r.verdict = d.rel <= e.rel ? Verdict::passed : Verdict::failed;
      const Distance o = distance(c, *eb);
      if (o.rows > 0) r.other_distance = o.rel, r.other_identical = o.identical;
    }
    out.push_back(r);
  }
  return out;
}

RankingDisagreement first_ranking_disagreement(const TapRecord& a, const TapRecord& b, int max_k) {
  RankingDisagreement out;
  if (a.cols != b.cols) return out;
  auto top = [&](const float* x, int k) {
    std::vector<int> idx(size_t(a.cols));
    std::iota(idx.begin(), idx.end(), 0);
    // Ties to the lowest id, as greedy sampling breaks them.
    std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), [&](int i, int j) { return x[i] > x[j] || (x[i] == x[j] && i < j); });
    idx.resize(size_t(k));
    return idx;
  };
  const int k = int(std::min<int64_t>(max_k, a.cols));
  int64_t step = 0;
  for (size_t i = 0; i < a.rows.size(); ++i) {
    const int64_t j = b.find_row(a.rows[i]);
    if (j < 0) continue;
    const auto ta = top(a.row(i), k), tb = top(b.row(size_t(j)), k);
    ++out.steps_compared;
    for (int kk = 0; kk < k; ++kk)
      if (ta[size_t(kk)] != tb[size_t(kk)]) {
        if (out.step < 0) {
          out.step = step, out.position = a.rows[i], out.k = kk + 1;
          out.top1_candidate = ta[0], out.top1_reference = tb[0];
        }
        break;
      }
    ++step;
  }
  return out;
}

}  // namespace ckjit::xray
