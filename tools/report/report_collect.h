#pragma once
// Builds the parts of a RunReport from what the run loaded: every tensor of the files with the
// type its kernel consumes and the kernel, the bridge layout, and the ceilings (measured now).
#include <string>
#include <vector>

#include "graph/bridge.h"
#include "graph/text_model.h"
#include "runtime/gguf/gguf_reader.h"
#include "tools/report/run_report.h"
#include "topology/machine.h"
#include "vision/vision_model.h"

namespace ckjit::report {

std::vector<TensorRow> text_tensor_rows(const gguf::GgufFile& f, const graph::TextModel& m);
std::vector<TensorRow> vision_tensor_rows(const gguf::GgufFile& f, const vision::VisionModel& v);

BridgeLayout bridge_layout(const graph::BridgePrompt& p, int64_t n_deepstack);
BridgeLayout text_layout(int64_t n_rows);  // a text prompt: one segment at positions 0..n-1

// The int8 dot rate of the ISA path in use and the f32 FMA rate (one pinned core, times threads)
// and DRAM read bandwidth, with jit/planner/peak_probe's loops (those of `ckjit tune` and
// bench_roofline) cut short: about 0.2-0.5 s. Run it after the run: it pins the calling thread.
Peaks measure_peaks_quick(const topo::Machine& m, int threads);

}  // namespace ckjit::report

namespace ckjit::report {

// The clocks `ckjit run` keeps, turned into phases.json's list (phases it has no clock for are
// marked not measured).
struct RunClocks {
  double open_ms = 0, load_wall_ms = 0;  // file open + header; the whole model construction
  double jit_ms = 0;                     // of load_wall_ms: emitting kernels (jit/emit_clock.h)
  int64_t jit_kernels = 0;
  bool vision = false;
  double encode_ms = 0;
  int64_t images = 0, image_rows = 0;
  double image_prefill_ms = 0, prefill_ms = 0, decode_ms = 0;
  int64_t prompt_rows = 0, decoded = 0;
};
std::vector<PhaseTime> run_phases(const RunClocks& c);

}  // namespace ckjit::report
