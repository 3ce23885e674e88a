#include "tools/report/report_collect.h"

#include <algorithm>
#include <chrono>
#include <map>

#include "jit/planner/peak_probe.h"

namespace ckjit::report {
namespace {

std::string kernel_text(const OpDesc& d) {
  std::string s = d.kernel_rows == d.kernel_row ? d.kernel_rows : "prefill: " + d.kernel_rows + "; decode: " + d.kernel_row;
  if (d.few_rows > 0) s += "; 2-" + std::to_string(d.few_rows) + " rows: " + d.kernel_few;
  return s;
}

bool ends_with(const std::string& s, const char* tail) {
  const std::string t = tail;
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

}  // namespace

std::vector<TensorRow> text_tensor_rows(const gguf::GgufFile& f, const graph::TextModel& m) {
  std::map<std::string, const graph::Linear*> linear;
  for (size_t i = 0; i < m.layers().size(); ++i) {
    const auto& L = m.layers()[i];
    const std::string b = "blk." + std::to_string(i) + ".";
    linear[b + "attn_q.weight"] = L.wq.get(), linear[b + "attn_k.weight"] = L.wk.get(), linear[b + "attn_v.weight"] = L.wv.get();
    linear[b + "attn_output.weight"] = L.wo.get(), linear[b + "ffn_gate.weight"] = L.gate.get();
    linear[b + "ffn_up.weight"] = L.up.get(), linear[b + "ffn_down.weight"] = L.down.get();
  }
  const bool tied = m.hparams().tied_output;
  linear[tied ? "token_embd.weight" : "output.weight"] = &m.lm_head();
  std::vector<TensorRow> rows;
  for (const gguf::TensorInfo& t : f.tensors()) {
    TensorRow r{"model", std::string(t.name), t.type.name, "", ""};
    auto it = linear.find(r.name);
    if (r.name == "token_embd.weight") {
      r.consumed = "f32 rows (gathered and dequantized)";
      r.kernel = "row gather + dequantize";
      if (tied) r.consumed += "; LM head: " + m.lm_head().op_desc()->input_type, r.kernel += "; LM head: " + kernel_text(*m.lm_head().op_desc());
    } else if (it != linear.end()) {
      const OpDesc& d = *it->second->op_desc();
      r.consumed = d.input_type + " activations";
      r.kernel = kernel_text(d);
      if (ends_with(r.name, "ffn_gate.weight") || ends_with(r.name, "ffn_up.weight")) {
        const size_t layer = size_t(std::stoul(r.name.substr(4)));
        r.kernel = "Gate-Up: " + kernel_text(m.layers()[layer].gate_up_desc);
      }
    } else if (ends_with(r.name, "norm.weight")) {
      r.consumed = "f32";
      r.kernel = "rms_norm (f32, squares summed in double)";
    } else {
      r.consumed = "f32";
      r.kernel = "-";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::vector<TensorRow> vision_tensor_rows(const gguf::GgufFile& f, const vision::VisionModel& v) {
  std::map<std::string, const vision::VisionMatmul*> linear;
  for (const auto& [name, d] : v.linears_by_tensor()) linear[name] = d;
  std::vector<TensorRow> rows;
  for (const gguf::TensorInfo& t : f.tensors()) {
    TensorRow r{"mmproj", std::string(t.name), t.type.name, "f32", "-"};
    if (auto it = linear.find(r.name); it != linear.end()) {
      const OpDesc& d = *it->second->op_desc();
      r.consumed = d.input_type + " rows";
      r.kernel = kernel_text(d) + (r.name.rfind("v.patch_embd", 0) == 0 ? " (both temporal kernels summed at load)" : "");
    } else if (ends_with(r.name, ".bias")) {
      const std::string w = r.name.substr(0, r.name.size() - 4) + "weight";
      r.kernel = linear.count(w) ? "bias epilogue of " + w : "layer_norm bias";
    } else if (r.name.find("ln") != std::string::npos || r.name.find("norm") != std::string::npos) {
      r.kernel = "layer_norm";
    } else if (r.name == "v.position_embd.weight") {
      r.kernel = "position table, bilinear resize to the patch grid";
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

BridgeLayout bridge_layout(const graph::BridgePrompt& p, int64_t n_deepstack) {
  BridgeLayout b;
  b.n_deepstack = n_deepstack;
  b.next_position = p.next_position;
  for (const graph::BridgeSegment& s : p.segments) {
    Segment o;
    o.image = s.image, o.first_row = s.first_row, o.n_rows = s.n_rows;
    o.first = {s.first.t, s.first.h, s.first.w}, o.last = {s.last.t, s.last.h, s.last.w};
    if (s.image) o.grid_w = s.last.w - s.first.w + 1, o.grid_h = s.last.h - s.first.h + 1;
    b.segments.push_back(o);
  }
  return b;
}

BridgeLayout text_layout(int64_t n_rows) {
  BridgeLayout b;
  Segment s;
  s.n_rows = n_rows;
  s.last = {n_rows - 1, n_rows - 1, n_rows - 1};
  b.segments.push_back(s);
  b.next_position = n_rows;
  return b;
}

Peaks measure_peaks_quick(const topo::Machine& m, int threads) {
  const auto t0 = std::chrono::steady_clock::now();
  planner::PeakProbeOptions o;
  o.compute_seconds = 0.01;
  o.repeats = 2;
  // Beyond the last-level cache, so its reads are DRAM reads, but small enough to be quick.
  o.dram_buffer_bytes = std::clamp<size_t>(4 * std::max(m.cache_bytes(3), m.cache_bytes(2)), size_t(64) << 20, size_t(512) << 20);
  const MeasuredPeaks p = planner::measure_peaks(m, o);
  Peaks out;
  out.measured = true;
  out.threads = threads;
  out.int8_gmacs = p.int8_gmacs_per_core * threads;
  out.f32_gmacs = p.f32_gmacs_per_core * threads;
  out.dram_gbs = p.dram_gbps;
  out.how = p.how;
  out.probe_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ckjit::report

namespace ckjit::report {

std::vector<PhaseTime> run_phases(const RunClocks& c) {
  std::vector<PhaseTime> p;
  p.push_back({"load", true, c.open_ms, c.vision ? 2 : 1, "files", "open + mmap + header and hyper-parameters"});
  p.push_back({"repack", true, std::max(0.0, c.load_wall_ms - c.jit_ms), 0, "",
               "model construction (weight repacks, tables, tokenizer wait) minus the JIT emitting below"});
  p.push_back({"jit", true, c.jit_ms, c.jit_kernels, "kernels", "code cache emitting time during load"});
  if (c.vision) p.push_back({"image_encode", true, c.encode_ms, c.images, "images", "preprocess + vision tower, " + std::to_string(c.image_rows) + " rows"});
  else p.push_back({"image_encode", false, 0, 0, "images", "text run: no image"});
  p.push_back({"image_prefill", c.vision, c.image_prefill_ms, c.image_rows, "rows", c.vision ? "decoder prefill of the image rows" : "text run: no image rows"});
  p.push_back({"text_prefill", true, c.prefill_ms - c.image_prefill_ms, c.prompt_rows - c.image_rows, "rows", "decoder prefill of the text rows"});
  p.push_back({"decode", true, c.decode_ms, c.decoded, "tokens", "one token per step"});
  return p;
}

}  // namespace ckjit::report
