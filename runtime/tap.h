#pragma once
// The tap: ops publish their outputs under stable semantic names ("L3.attn_norm", "L3.q_roped",
// "logits", "V7.block_out", "V.merger"; runtime/checkpoints.h lists them) with the rows' sequence
// positions, so that two runs can be compared checkpoint by checkpoint (ckjit xray). Off (a null
// tap) it costs the callers one pointer test per op. A filter selects names (regex) and rows.
//
// Same-input replay: an override gives a checkpoint's values from another run; when the op
// publishes that name, its buffer is overwritten in place with those rows before anything
// downstream reads it, so everything after runs on the other run's input.
#include <cstdint>
#include <map>
#include <memory>
#include <regex>
#include <string>
#include <vector>

namespace ckjit {

// One checkpoint of one run: rows (by sequence position) of cols floats, in publish order.
struct TapRecord {
  std::string name;
  int64_t cols = 0;
  std::vector<int64_t> rows;  // sequence position of each stored row, increasing
  std::vector<float> data;    // rows.size() x cols
  const float* row(size_t i) const { return data.data() + i * size_t(cols); }
  // Index of sequence row `pos` in rows, or -1.
  int64_t find_row(int64_t pos) const;
};

// The record named `name` in a run's records, or nullptr.
const TapRecord* find_record(const std::vector<TapRecord>& records, const std::string& name);

struct TapFilter {
  std::string names = ".*";  // ECMAScript regex over the whole name
  int64_t row_begin = 0, row_end = INT64_MAX;  // sequence rows kept: [row_begin, row_end)
};

class Tap {
 public:
  explicit Tap(const TapFilter& filter = {});

  // Whether `name` passes the filter (cached per name).
  bool wants(const std::string& name);
  // Publishes n rows of `cols` floats (row stride ld floats) whose sequence positions are
  // pos[0..n) (or row0 + i when pos is null). With an override for name, the rows it holds are
  // first copied into `data`.
  void publish(const std::string& name, float* data, int64_t n, int64_t cols, int64_t ld, int64_t row0,
               const int64_t* pos = nullptr);

  // Records in first-publish order.
  const std::vector<TapRecord>& records() const { return records_; }
  const TapRecord* find(const std::string& name) const;
  std::vector<TapRecord> take() { index_.clear(); return std::move(records_); }

  // Same-input replay: rows of `r` replace what the op produces under r.name.
  void set_override(TapRecord r);
  size_t overrides_applied() const { return overrides_applied_; }

 private:
  TapFilter filter_;
  std::regex re_;
  std::map<std::string, bool> wanted_;
  std::vector<TapRecord> records_;
  std::map<std::string, size_t> index_;
  std::map<std::string, TapRecord> overrides_;
  size_t overrides_applied_ = 0;
};

}  // namespace ckjit
