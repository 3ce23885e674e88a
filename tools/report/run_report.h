#pragma once
// `ckjit run --report DIR`: what a run leaves behind to explain where its time went. The run
// gathers a RunReport (plain values; report_collect.h builds them from the models), then
// write_run_report() writes machine.json, phases.json, ops.csv, dtypes.csv, bridge.json and one
// self-contained report.html into DIR.
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/op_profile.h"

namespace ckjit::report {

// One phase of the run. measured = false: the run has no clock for it (kept, and said so, rather
// than given a number).
struct PhaseTime {
  std::string name;
  bool measured = true;
  double ms = 0;
  int64_t count = 0;
  std::string unit;  // what count counts: "rows", "tokens", "kernels", "images", "files"
  std::string note;  // how it was measured
};

// One tensor of a model file and what the run does with it.
struct TensorRow {
  std::string file;      // "model" or "mmproj"
  std::string name, stored, consumed, kernel;
};

struct Thw { int64_t t = 0, h = 0, w = 0; };
struct Segment {
  bool image = false;
  int64_t first_row = 0, n_rows = 0;
  Thw first, last;             // M-RoPE positions of its first and last row
  int64_t grid_w = 0, grid_h = 0;  // merged patches (image segments)
};
struct BridgeLayout {
  std::vector<Segment> segments;
  int64_t n_deepstack = 0;     // deepstack slices each image row carries
  int64_t next_position = 0;   // where decoding continues
};

// The ceilings each op is judged against, for the run's thread count.
struct Peaks {
  bool measured = false;
  double int8_gmacs = 0, f32_gmacs = 0, dram_gbs = 0;  // one-core compute rates x threads; DRAM with all threads
  int threads = 1;
  double probe_ms = 0;   // how long measuring took (after the run; not part of its phases)
  std::string how;
};

struct RunReport {
  std::string machine_name, machine_json;
  int threads = 1;
  std::string model_path, mmproj_path;
  std::vector<PhaseTime> phases;
  const OpProfile* profile = nullptr;  // with keep_calls(): one ops.csv row per record
  Peaks peaks;
  std::vector<TensorRow> tensors;
  BridgeLayout bridge;
};

// Creates DIR if needed and checks a file can be written there: "" when it can, else why not.
std::string check_report_dir(const std::string& dir);

// Writes the six files; throws ckjit::Error naming the file that could not be written.
void write_run_report(const std::string& dir, const RunReport& r);

// The pieces, for tests and for report_html.
std::string machine_json(const RunReport& r);
std::string phases_json(const RunReport& r);
std::string ops_csv(const RunReport& r);
std::string dtypes_csv(const RunReport& r);
std::string bridge_json(const RunReport& r);
std::string report_html(const RunReport& r);

// How one executed op compares with the ceilings: its rates and the ceiling it is judged by (the
// larger share of compute or of DRAM bandwidth: the bound it is nearer).
struct OpRate {
  double gmacs = 0, weight_gbs = 0;
  std::string peak;  // "int8 57.6 GMAC/s", "DRAM 18.2 GB/s", "" when neither applies
  double pct = -1;   // of that peak; -1: not judged
};
OpRate op_rate(const OpProfile::CallRecord& c, const Peaks& p);

}  // namespace ckjit::report
