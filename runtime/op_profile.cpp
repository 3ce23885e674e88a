#include "runtime/op_profile.h"

#include <cstdio>
#include <cstring>

namespace ckjit {

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::encode: return "encode";
    case Phase::image_prefill: return "image_prefill";
    case Phase::text_prefill: return "text_prefill";
    case Phase::decode: return "decode";
  }
  return "?";
}

void OpProfile::keep_calls(size_t reserve) {
  keep_calls_ = true;
  calls_.reserve(reserve);
}

void OpProfile::add(const char* op, int layer, double ms, OpWork w, const OpCall& call) {
  if (keep_calls_) calls_.push_back(CallRecord{phase_, layer, op, ms, w, call});
  auto& ops = ops_[int(phase_)];
  OpCell* cell = nullptr;
  for (auto& o : ops)
    if (o.op == op || std::strcmp(o.op, op) == 0) cell = &o;
  if (!cell) cell = &ops.emplace_back(OpCell{op, {}});
  cell->c.ms += ms, cell->c.macs += w.macs, cell->c.bytes += w.weight_bytes, ++cell->c.calls;
  if (layer >= 0) {
    auto& ls = layers_[int(phase_)];
    if (size_t(layer) >= ls.size()) ls.resize(size_t(layer) + 1);
    ls[size_t(layer)].ms += ms, ls[size_t(layer)].macs += w.macs, ls[size_t(layer)].bytes += w.weight_bytes;
    ++ls[size_t(layer)].calls;
  }
}

OpProfile::PhaseTotals OpProfile::totals(Phase p) const {
  PhaseTotals t;
  for (const auto& o : ops_[int(p)]) t.total.ms += o.c.ms, t.total.macs += o.c.macs, t.total.bytes += o.c.bytes, t.total.calls += o.c.calls;
  t.rows = rows_[int(p)];
  return t;
}

std::vector<std::string> OpProfile::report() const {
  std::vector<std::string> out;
  char buf[512];
  for (int pi = 0; pi < kPhases; ++pi) {
    const Phase p = Phase(pi);
    const PhaseTotals t = totals(p);
    if (t.total.calls == 0) continue;
    std::snprintf(buf, sizeof buf, "profile: %s: %.1f ms in %lld op calls, %lld rows, %.2f GMAC, %.1f MB of weights read",
                  phase_name(p), t.total.ms, (long long)t.total.calls, (long long)t.rows, t.total.macs / 1e9,
                  t.total.bytes / 1e6);
    out.push_back(buf);
    out.push_back("profile:   op                     ms       %   calls   GMAC/s  weight GB/s");
    for (const auto& o : ops_[pi]) {
      const double s = o.c.ms / 1e3;
      std::snprintf(buf, sizeof buf, "profile:   %-16s %10.1f  %5.1f%%  %6lld  %7.1f  %7.2f", o.op, o.c.ms,
                    t.total.ms > 0 ? 100.0 * o.c.ms / t.total.ms : 0.0, (long long)o.c.calls,
                    s > 0 ? o.c.macs / s / 1e9 : 0.0, s > 0 ? o.c.bytes / s / 1e9 : 0.0);
      out.push_back(buf);
    }
    if (!layers_[pi].empty()) {
      std::string line = "profile:   per layer (ms):";
      for (size_t l = 0; l < layers_[pi].size(); ++l) {
        std::snprintf(buf, sizeof buf, " %zu:%.1f", l, layers_[pi][l].ms);
        line += buf;
      }
      out.push_back(line);
    }
  }
  for (int pi = 0; pi < kPhases; ++pi) {
    const PhaseTotals t = totals(Phase(pi));
    if (t.total.calls == 0) continue;
    std::string line = std::string("profile-phase: ") + phase_name(Phase(pi));
    std::snprintf(buf, sizeof buf, " ms=%.3f rows=%lld macs=%.6g weight_bytes=%.6g", t.total.ms, (long long)t.rows,
                  t.total.macs, t.total.bytes);
    line += buf;
    for (const auto& o : ops_[pi]) {
      std::snprintf(buf, sizeof buf, " %s=%.3f:%.6g:%.6g", o.op, o.c.ms, o.c.macs, o.c.bytes);
      line += buf;
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace ckjit
