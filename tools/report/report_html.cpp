// report.html of `ckjit run --report`: one self-contained page (inline CSS, SVG and one small
// script; nothing fetched) that fits a 1280 px window: the SVGs scale to the page width, tables
// have fixed layout and break long kernel names.
#include <algorithm>
#include <cstdio>
#include <map>

#include "tools/report/run_report.h"

namespace ckjit::report {
namespace {

std::string esc(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

const char* kColors[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
const char* color(size_t i) { return kColors[i % (sizeof kColors / sizeof kColors[0])]; }

// The time of each measured phase as one stacked bar, with a legend.
std::string phase_bar(const RunReport& r) {
  double total = 0;
  for (const PhaseTime& p : r.phases)
    if (p.measured) total += p.ms;
  std::string svg = "<svg id=\"phase-bar\" viewBox=\"0 0 1000 40\" width=\"100%\" role=\"img\" aria-label=\"time per phase\">";
  double x = 0;
  size_t i = 0;
  std::string legend = "<table class=\"t\" id=\"phase-table\"><colgroup><col style=\"width:30%\"><col style=\"width:15%\"><col style=\"width:20%\"><col style=\"width:35%\"></colgroup>"
                       "<tr><th>phase</th><th>ms</th><th>count</th><th>how</th></tr>";
  for (const PhaseTime& p : r.phases) {
    const std::string sw = "<span class=\"sw\" style=\"background:" + std::string(color(i)) + "\"></span>";
    legend += "<tr><td>" + sw + esc(p.name) + "</td><td>" + (p.measured ? fmt("%.1f", p.ms) : "not measured") + "</td><td>" +
              std::to_string(p.count) + " " + esc(p.unit) + "</td><td>" + esc(p.note) + "</td></tr>";
    if (p.measured && total > 0 && p.ms > 0) {
      const double w = 1000 * p.ms / total;
      svg += "<rect class=\"phase\" x=\"" + fmt("%.2f", x) + "\" y=\"0\" width=\"" + fmt("%.2f", w) + "\" height=\"40\" fill=\"" +
             color(i) + "\"><title>" + esc(p.name) + " " + fmt("%.1f", p.ms) + " ms</title></rect>";
      x += w;
    }
    ++i;
  }
  return svg + "</svg>" + legend + "</table>";
}

// Horizontal bars, one per label: value and text at the right.
std::string bars(const std::string& id, const std::vector<std::pair<std::string, double>>& rows, const char* unit) {
  double top = 0;
  for (const auto& [_, v] : rows) top = std::max(top, v);
  const int h = 18, H = int(rows.size()) * (h + 4) + 4;
  // 600 units across: about one unit per pixel in a half-page column, so the text stays 12 px.
  std::string svg = "<svg class=\"bars\" id=\"" + id + "\" viewBox=\"0 0 600 " + std::to_string(H) +
                    "\" width=\"100%\" role=\"img\">";
  int y = 4;
  for (size_t i = 0; i < rows.size(); ++i) {
    const double w = top > 0 ? 330 * rows[i].second / top : 0;
    svg += "<text x=\"150\" y=\"" + std::to_string(y + 13) + "\" text-anchor=\"end\">" + esc(rows[i].first) + "</text>";
    svg += "<rect class=\"op-bar\" x=\"158\" y=\"" + std::to_string(y) + "\" width=\"" + fmt("%.2f", std::max(w, 0.5)) +
           "\" height=\"" + std::to_string(h) + "\" fill=\"" + color(i) + "\"></rect>";
    svg += "<text x=\"" + fmt("%.1f", 164 + w) + "\" y=\"" + std::to_string(y + 13) + "\">" + fmt("%.2f", rows[i].second) + " " +
           unit + "</text>";
    y += h + 4;
  }
  return svg + "</svg>";
}

// Per phase: the time of each op kind and of each layer, summed over the calls.
std::string time_charts(const RunReport& r) {
  if (!r.profile || r.profile->calls().empty()) return "<p>No op profile was recorded.</p>";
  std::string out;
  for (int pi = 0; pi < kPhases; ++pi) {
    std::vector<std::pair<std::string, double>> ops, layers;
    std::map<int, double> by_layer;
    for (const auto& c : r.profile->calls()) {
      if (int(c.phase) != pi) continue;
      auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return o.first == c.op; });
      if (it == ops.end()) ops.emplace_back(c.op, c.ms);
      else it->second += c.ms;
      by_layer[c.layer] += c.ms;
    }
    if (ops.empty()) continue;
    std::sort(ops.begin(), ops.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const auto& [l, ms] : by_layer) layers.emplace_back(l < 0 ? "outside layers" : "layer " + std::to_string(l), ms);
    const std::string name = phase_name(Phase(pi));
    out += "<h3>" + esc(name) + "</h3><div class=\"two\"><div><h4>per op kind</h4>" + bars("ops-" + name, ops, "ms") +
           "</div><div><h4>per layer</h4>" + bars("layers-" + name, layers, "ms") + "</div></div>";
  }
  return out;
}

std::string dtype_table(const RunReport& r) {
  std::string t = "<table class=\"t\" id=\"dtype-table\"><colgroup><col style=\"width:8%\"><col style=\"width:24%\">"
                  "<col style=\"width:9%\"><col style=\"width:14%\"><col style=\"width:45%\"></colgroup>"
                  "<tr><th>file</th><th>tensor</th><th>stored</th><th>consumed</th><th>kernel</th></tr>";
  for (const TensorRow& row : r.tensors)
    t += "<tr class=\"dtype-row\"><td>" + esc(row.file) + "</td><td>" + esc(row.name) + "</td><td>" + esc(row.stored) + "</td><td>" +
         esc(row.consumed) + "</td><td>" + esc(row.kernel) + "</td></tr>";
  return t + "</table>";
}

std::string bridge_table(const RunReport& r) {
  auto thw = [](const Thw& p) { return std::to_string(p.t) + "/" + std::to_string(p.h) + "/" + std::to_string(p.w); };
  std::string t = "<table class=\"t\" id=\"bridge-table\"><tr><th>segment</th><th>rows</th><th>first t/h/w</th>"
                  "<th>last t/h/w</th><th>grid (w x h)</th><th>deepstack slices</th></tr>";
  for (const Segment& s : r.bridge.segments)
    t += "<tr class=\"bridge-row\"><td>" + std::string(s.image ? "image" : "text") + "</td><td>" + std::to_string(s.first_row) + "-" +
         std::to_string(s.first_row + s.n_rows - 1) + " (" + std::to_string(s.n_rows) + ")</td><td>" + thw(s.first) + "</td><td>" +
         thw(s.last) + "</td><td>" + (s.image ? std::to_string(s.grid_w) + " x " + std::to_string(s.grid_h) : "-") + "</td><td>" +
         (s.image ? std::to_string(r.bridge.n_deepstack) : "-") + "</td></tr>";
  return t + "</table><p>Decoding continues at position " + std::to_string(r.bridge.next_position) + ".</p>";
}

}  // namespace

std::string report_html(const RunReport& r) {
  std::string peaks = r.peaks.measured
                          ? "int8 " + fmt("%.1f", r.peaks.int8_gmacs) + " GMAC/s, f32 FMA " + fmt("%.1f", r.peaks.f32_gmacs) +
                                " GMAC/s, DRAM read " + fmt("%.1f", r.peaks.dram_gbs) + " GB/s for " +
                                std::to_string(r.peaks.threads) + " threads (" + esc(r.peaks.how) + ")"
                          : "not measured";
  std::string h =
      "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ckjit run report</title><style>"
      "body{font:14px/1.4 sans-serif;margin:16px;max-width:1240px;color:#222}"
      "h1{font-size:20px}h2{font-size:17px;margin-top:24px;border-bottom:1px solid #ccc}h3{font-size:15px}h4{font-size:13px;margin:4px 0}"
      ".machine{font-family:monospace;background:#f4f4f4;padding:6px;overflow-wrap:anywhere}"
      "table.t{table-layout:fixed;width:100%;border-collapse:collapse;font-size:12px}"
      "table.t td,table.t th{border:1px solid #ddd;padding:2px 4px;text-align:left;vertical-align:top;overflow-wrap:anywhere;word-break:break-word}"
      "table.t th{background:#eee}.sw{display:inline-block;width:10px;height:10px;margin-right:4px}"
      ".two{display:grid;grid-template-columns:1fr 1fr;gap:12px}svg{display:block}svg text{font:12px sans-serif}"
      "p{overflow-wrap:anywhere}"
      "</style></head><body><h1>ckjit run report</h1>";
  h += "<p class=\"machine\" id=\"machine\">" + esc(r.machine_name) + "</p>";
  h += "<p>model: " + esc(r.model_path) + (r.mmproj_path.empty() ? "" : "<br>mmproj: " + esc(r.mmproj_path)) + "<br>threads: " +
       std::to_string(r.threads) + "<br>peaks (measured in this run, after it): " + peaks + "</p>";
  h += "<h2>Phases</h2>" + phase_bar(r);
  h += "<h2>Where the time went</h2><p>Sum of the timed op calls (ops.csv has one row per call).</p>" + time_charts(r);
  h += "<h2>Bridge layout</h2>" + bridge_table(r);
  h += "<h2>Tensors: stored type, consumed type, kernel</h2>" + dtype_table(r);
  // The page's own width, for the headless-browser test (no horizontal overflow at 1280 px).
  h += "<script>document.documentElement.setAttribute('data-scroll-width', String(document.documentElement.scrollWidth));</script>";
  return h + "</body></html>\n";
}

}  // namespace ckjit::report
