// The machine-readable files of `ckjit run --report`: JSON through nlohmann-json (runtime/json.h), CSV
// with every text field quoted (kernel specs hold commas).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "runtime/error.h"
#include "runtime/json.h"
#include "tools/report/run_report.h"

namespace ckjit::report {
namespace {

std::string csv_text(const std::string& s) {
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::string num(double v, const char* fmt = "%.4f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

// The weights of a call joined: "Q4_K+Q4_K+Q6_K"; N as a '+' list, K once when all agree.
struct CallShape { std::string n, k, wtype, itype, kernel; };
CallShape call_shape(const OpCall& c) {
  CallShape s;
  std::vector<int64_t> ks;
  for (const OpDesc* d : c.w) {
    if (!d) continue;
    auto join = [](std::string& into, const std::string& v, const char* sep) {
      if (v.empty()) return;
      into += (into.empty() ? "" : sep) + v;
    };
    if (d->n > 0) join(s.n, std::to_string(d->n), "+");
    ks.push_back(d->k);
    join(s.wtype, d->weight_type, "+");
    if (s.itype.find(d->input_type) == std::string::npos) join(s.itype, d->input_type, ",");
    if (s.kernel.find(d->kernel(c.m, c.decode_rows)) == std::string::npos) join(s.kernel, d->kernel(c.m, c.decode_rows), " | ");
  }
  const bool same_k = std::all_of(ks.begin(), ks.end(), [&](int64_t k) { return k == ks.front(); });
  for (size_t i = 0; i < ks.size(); ++i) {
    if (same_k && i > 0) break;
    s.k += (i ? "+" : "") + std::to_string(ks[i]);
  }
  return s;
}

bool int8_input(const OpCall& c) {
  const OpDesc* d = c.w[0];
  return d && (d->input_type == "Q8_K" || d->input_type == "Q8_0");
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write '" + p.string() + "'");
  out << text;
  out.flush();
  if (!out) throw Error("writing '" + p.string() + "' failed");
}

}  // namespace

OpRate op_rate(const OpProfile::CallRecord& c, const Peaks& p) {
  OpRate r;
  const double s = c.ms / 1e3;
  if (s <= 0) return r;
  r.gmacs = c.work.macs / s / 1e9;
  r.weight_gbs = c.work.weight_bytes / s / 1e9;
  if (!p.measured) return r;
  // Int8 kernels (K-quant and Q8_0 weights against Q8_K/Q8_0 rows) against the int8 dot rate;
  // float ones (the vision tower's dense kernels, attention) against the f32 FMA rate.
  const bool int8 = int8_input(c.call);
  const double compute = int8 ? p.int8_gmacs : p.f32_gmacs;
  const double pc = c.work.macs > 0 && compute > 0 ? r.gmacs / compute : -1;
  const double pm = c.work.weight_bytes > 0 && p.dram_gbs > 0 ? r.weight_gbs / p.dram_gbs : -1;
  if (pc < 0 && pm < 0) return r;
  if (pc >= pm) r.peak = std::string(int8 ? "int8 " : "f32 FMA ") + num(compute, "%.1f") + " GMAC/s", r.pct = 100 * pc;
  else r.peak = "DRAM " + num(p.dram_gbs, "%.1f") + " GB/s", r.pct = 100 * pm;
  return r;
}

std::string machine_json(const RunReport& r) {
  OrderedJson j = {{"name", r.machine_name}, {"threads", r.threads}};
  // The whole machine value, as `ckjit info --json` prints it.
  j["machine"] = r.machine_json.empty() ? OrderedJson(nullptr) : OrderedJson::parse(r.machine_json);
  return dump_json(j) + "\n";
}

std::string phases_json(const RunReport& r) {
  OrderedJson j;
  j["threads"] = r.threads;
  OrderedJson& phases = j["phases"] = OrderedJson::array();
  for (const PhaseTime& p : r.phases) {
    OrderedJson pj = {{"name", p.name}, {"measured", p.measured}};
    if (p.measured) pj["ms"] = p.ms;
    pj["count"] = p.count, pj["unit"] = p.unit, pj["note"] = p.note;
    phases.push_back(std::move(pj));
  }
  if (r.profile) {
    // The op profile's sums per phase: what ops.csv adds up to.
    OrderedJson& prof = j["profiled"] = OrderedJson::array();
    for (int pi = 0; pi < kPhases; ++pi) {
      const auto t = r.profile->totals(Phase(pi));
      if (t.total.calls == 0) continue;
      prof.push_back({{"phase", phase_name(Phase(pi))}, {"ms", t.total.ms}, {"op_calls", t.total.calls}, {"rows", t.rows},
                      {"macs", t.total.macs}, {"weight_bytes", t.total.bytes}});
    }
  }
  OrderedJson& peaks = j["peaks"] = {{"measured", r.peaks.measured}};
  if (r.peaks.measured) {
    peaks["int8_gmacs"] = r.peaks.int8_gmacs, peaks["f32_gmacs"] = r.peaks.f32_gmacs, peaks["dram_gbs"] = r.peaks.dram_gbs;
    peaks["threads"] = r.peaks.threads, peaks["probe_ms"] = r.peaks.probe_ms, peaks["how"] = r.peaks.how;
  }
  return dump_json(j) + "\n";
}

std::string ops_csv(const RunReport& r) {
  std::string out = "phase,layer,op,M,N,K,weight_type,input_type,kernel,threads,ms,gmacs,weight_gbs,peak,pct_of_peak\n";
  if (!r.profile) return out;
  out.reserve(r.profile->calls().size() * 200);
  for (const auto& c : r.profile->calls()) {
    const CallShape s = call_shape(c.call);
    const OpRate rate = op_rate(c, r.peaks);
    out += std::string(phase_name(c.phase)) + "," + (c.layer >= 0 ? std::to_string(c.layer) : "") + "," + csv_text(c.op) + "," +
           std::to_string(c.call.m) + "," + csv_text(s.n) + "," + csv_text(s.k) + "," + csv_text(s.wtype) + "," +
           csv_text(s.itype) + "," + csv_text(s.kernel) + "," + std::to_string(r.threads) + "," + num(c.ms) + "," +
           (c.work.macs > 0 ? num(rate.gmacs, "%.3f") : "") + "," + (c.work.weight_bytes > 0 ? num(rate.weight_gbs, "%.3f") : "") +
           "," + csv_text(rate.peak) + "," + (rate.pct >= 0 ? num(rate.pct, "%.1f") : "") + "\n";
  }
  return out;
}

std::string dtypes_csv(const RunReport& r) {
  std::string out = "file,tensor,stored_type,consumed_type,kernel\n";
  for (const TensorRow& t : r.tensors)
    out += csv_text(t.file) + "," + csv_text(t.name) + "," + csv_text(t.stored) + "," + csv_text(t.consumed) + "," +
           csv_text(t.kernel) + "\n";
  return out;
}

std::string bridge_json(const RunReport& r) {
  OrderedJson j = {{"n_deepstack", r.bridge.n_deepstack}, {"next_position", r.bridge.next_position}};
  OrderedJson& segs = j["segments"] = OrderedJson::array();
  auto pos = [](const Thw& p) { return OrderedJson{{"t", p.t}, {"h", p.h}, {"w", p.w}}; };
  for (const Segment& s : r.bridge.segments) {
    OrderedJson sj = {{"kind", s.image ? "image" : "text"}, {"first_row", s.first_row}, {"last_row", s.first_row + s.n_rows - 1},
                      {"rows", s.n_rows}, {"first_position", pos(s.first)}, {"last_position", pos(s.last)}};
    if (s.image) {
      sj["grid"] = {{"w", s.grid_w}, {"h", s.grid_h}};
      sj["deepstack_slices"] = r.bridge.n_deepstack;
    }
    segs.push_back(std::move(sj));
  }
  return dump_json(j) + "\n";
}

std::string check_report_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec)) return "'" + dir + "' is not a directory";
  fs::create_directories(dir, ec);
  if (ec) return "cannot create the directory '" + dir + "': " + ec.message();
  if (!fs::is_directory(dir, ec)) return "'" + dir + "' is not a directory";
  const fs::path probe = fs::path(dir) / ".ckjit-report-probe";
  {
    std::ofstream out(probe);
    if (!out || !(out << "ok") || !out.flush()) return "cannot write files in '" + dir + "'";
  }
  fs::remove(probe, ec);
  return "";
}

void write_run_report(const std::string& dir, const RunReport& r) {
  if (const std::string why = check_report_dir(dir); !why.empty()) throw Error(why);
  const std::filesystem::path d(dir);
  write_file(d / "machine.json", machine_json(r));
  write_file(d / "phases.json", phases_json(r));
  write_file(d / "ops.csv", ops_csv(r));
  write_file(d / "dtypes.csv", dtypes_csv(r));
  write_file(d / "bridge.json", bridge_json(r));
  write_file(d / "report.html", report_html(r));
}

}  // namespace ckjit::report
