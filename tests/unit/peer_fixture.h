#pragma once
// Helpers shared by the parity tests that read peer-recorded fixtures (tests/fixtures/*/): JSON
// id lists, the tbt_top rows ([[id, logit], ...] per forced step), number formatting.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/json.h"

namespace peer_fixture {

inline std::vector<int32_t> ints(const ckjit::JsonValue& a) {
  std::vector<int32_t> v;
  for (const auto& x : a.as_array()) v.push_back(int32_t(x.as_int()));
  return v;
}

inline std::string join(const std::vector<int32_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + std::to_string(v[i]);
  return s;
}

inline std::string fmt(double x, int prec = 6) {
  std::ostringstream o;
  o << std::setprecision(prec) << x;
  return o.str();
}

// A run's "tbt_top": per step, the ids (descending logit) and their logits.
inline void read_top(const ckjit::JsonValue& tbt_top, std::vector<std::vector<int32_t>>& ids,
                     std::vector<std::vector<float>>& logits) {
  for (const auto& step : tbt_top.as_array()) {
    ids.emplace_back();
    logits.emplace_back();
    for (const auto& e : step.as_array()) {
      ids.back().push_back(int32_t(e.as_array().at(0).as_int()));
      logits.back().push_back(float(e.as_array().at(1).as_number()));
    }
  }
}

// S*(s), llama.cpp's float-order spread up to step s: every run's batched vs token-by-token logits
// (runs with batched logits) and every pair of runs' token-by-token logits at the ids both stored,
// then the running max over steps. Run: ids, tbt, batched as [step][k].
template <class Run>
std::vector<float> spread_so_far(const std::vector<Run>& runs, size_t steps) {
  std::vector<float> sp(steps, 0.0f);
  for (size_t s = 0; s < steps; ++s) {
    for (const Run& r : runs)
      if (!r.batched.empty())
        for (size_t i = 0; i < r.ids[s].size(); ++i) sp[s] = std::max(sp[s], std::fabs(r.batched[s][i] - r.tbt[s][i]));
    for (size_t a = 0; a < runs.size(); ++a)
      for (size_t b = a + 1; b < runs.size(); ++b)
        for (size_t i = 0; i < runs[a].ids[s].size(); ++i)
          for (size_t j = 0; j < runs[b].ids[s].size(); ++j)
            if (runs[a].ids[s][i] == runs[b].ids[s][j])
              sp[s] = std::max(sp[s], std::fabs(runs[a].tbt[s][i] - runs[b].tbt[s][j]));
    if (s > 0) sp[s] = std::max(sp[s], sp[s - 1]);
  }
  return sp;
}

}  // namespace peer_fixture
