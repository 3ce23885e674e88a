#pragma once
// Where a run's milliseconds went: wall time, MACs and weight bytes per (phase, op kind) and per
// (phase, layer), recorded around each op by its caller when a profile is attached (ckjit run
// --profile). Every op runs to completion on the pool before it returns, so the caller's wall
// clock is the op's time. Off (a null profile) it costs one pointer test per op. With keep_calls()
// (ckjit run --report) every call is also kept as one record: its shape and a pointer to the
// descriptor of the weights it ran (owned by the model, built at load), so recording a call copies
// no strings and, within the reserve, allocates nothing.
#include <array>
#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ckjit {

enum class Phase : int { encode, image_prefill, text_prefill, decode };
inline constexpr int kPhases = 4;
const char* phase_name(Phase p);

// What an op did: multiply-accumulates and bytes of weights it read.
struct OpWork {
  double macs = 0, weight_bytes = 0;
};
inline OpWork operator+(OpWork a, OpWork b) { return {a.macs + b.macs, a.weight_bytes + b.weight_bytes}; }

// What a weight op (or an input preparation) is: built once at load by the weight's owner
// (graph::Linear, vision::DenseLinear) and pointed to by the calls it times.
struct OpDesc {
  OpDesc() = default;
  OpDesc(int64_t n, int64_t k, std::string weight_type, std::string input_type, std::string kernel_rows, std::string kernel_row)
      : n(n), k(k), weight_type(std::move(weight_type)), input_type(std::move(input_type)),
        kernel_rows(std::move(kernel_rows)), kernel_row(std::move(kernel_row)) {}
  int64_t n = 0, k = 0;           // output columns and reduction length (n = 0: no weight, e.g. quantize)
  std::string weight_type;        // stored type(s): "Q4_K", "Q4_K+Q4_K" for a fused pair, "" for none
  std::string input_type;         // what the kernel consumed: "Q8_K", "f16", "f32 -> Q8_K" for a quantizer
  std::string kernel_rows;        // the kernel or implementation that runs M > 1 rows
  std::string kernel_row;         // ... and M = 1 (decode)
  std::string kernel_few;         // ... and 2..few_rows rows where another kernel serves them (decode of several sequences)
  int64_t few_rows = 0;
  // ... and the decode rows of several sequences (batched decode), where each runs what one row
  // runs rather than what a batch of as many rows would ("": as a batch).
  std::string kernel_decode;
  void set_few_rows(int64_t up_to, std::string kernel) { few_rows = up_to, kernel_few = std::move(kernel); }
  const std::string& kernel(int64_t m, bool decode_rows = false) const {
    if (decode_rows && m > 1 && !kernel_decode.empty()) return kernel_decode;
    return m == 1 ? kernel_row : m <= few_rows ? kernel_few : kernel_rows;
  }
};

// The shape of one timed call: its rows and up to three weights that read the same input (Q/K/V).
struct OpCall {
  int64_t m = 0;
  std::array<const OpDesc*, 3> w{};
  bool decode_rows = false;  // the rows are decode steps of several sequences (OpDesc::kernel_decode)
};

class OpProfile {
 public:
  void set_phase(Phase p) { phase_ = p; }
  Phase phase() const { return phase_; }
  // One call of op `op` (a string literal naming the op kind) in layer `layer` (-1: none).
  void add(const char* op, int layer, double ms, OpWork w = {}, const OpCall& call = {});
  // Also keep one record per call from now on (reserved up front: no allocation per op within it).
  void keep_calls(size_t reserve);
  struct CallRecord {
    Phase phase;
    int layer;
    const char* op;
    double ms;
    OpWork work;
    OpCall call;
  };
  const std::vector<CallRecord>& calls() const { return calls_; }
  // Rows (tokens, patches) a phase processed, for the per-row figures.
  void add_rows(Phase p, int64_t rows) { rows_[int(p)] += rows; }

  struct Cell {
    double ms = 0, macs = 0, bytes = 0;
    int64_t calls = 0;
  };
  struct PhaseTotals {
    Cell total;
    int64_t rows = 0;
  };
  PhaseTotals totals(Phase p) const;
  // Human-readable table: per phase, each op kind (ms, %, calls, GMAC/s, GB/s of weights) and the
  // time of each layer; plus one machine-readable line per phase for perf/compare:
  // "profile-phase: NAME ms=.. rows=.. macs=.. weight_bytes=.. OP=ms:macs:weight_bytes ...".
  std::vector<std::string> report() const;

 private:
  struct OpCell {
    const char* op;
    Cell c;
  };
  Phase phase_ = Phase::text_prefill;
  std::vector<OpCell> ops_[kPhases];  // in first-seen order
  std::vector<Cell> layers_[kPhases];
  int64_t rows_[kPhases] = {};
  bool keep_calls_ = false;
  std::vector<CallRecord> calls_;
};

// Times one op into a profile (nothing when the profile is null).
class OpTimer {
 public:
  OpTimer(OpProfile* p, const char* op, int layer = -1, OpWork w = {}, OpCall call = {})
      : p_(p), op_(op), layer_(layer), w_(w), call_(call) {
    if (p_) t0_ = std::chrono::steady_clock::now();
  }
  ~OpTimer() {
    if (p_)
      p_->add(op_, layer_, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0_).count(), w_,
              call_);
  }
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  OpProfile* p_;
  const char* op_;
  int layer_;
  OpWork w_;
  OpCall call_;
  std::chrono::steady_clock::time_point t0_;
};

}  // namespace ckjit
