#pragma once
// Helpers shared by the parity tests that read peer-recorded fixtures (tests/fixtures/*/): JSON
// id lists, the tbt_top rows ([[id, logit], ...] per forced step), number formatting.
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

}  // namespace peer_fixture
