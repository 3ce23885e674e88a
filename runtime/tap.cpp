#include "runtime/tap.h"

#include <algorithm>
#include <cstring>

#include "runtime/error.h"

namespace ckjit {

int64_t TapRecord::find_row(int64_t pos) const {
  // A run publishes its rows in increasing position (chunks, decode steps, patches in order).
  auto it = std::lower_bound(rows.begin(), rows.end(), pos);
  return it != rows.end() && *it == pos ? int64_t(it - rows.begin()) : -1;
}

const TapRecord* find_record(const std::vector<TapRecord>& records, const std::string& name) {
  for (const auto& r : records)
    if (r.name == name) return &r;
  return nullptr;
}

Tap::Tap(const TapFilter& filter) : filter_(filter) {
  try {
    re_ = std::regex(filter.names, std::regex::ECMAScript);
  } catch (const std::regex_error& e) {
    throw Error("tap: the checkpoint filter '" + filter.names + "' is not a valid regular expression (" + e.what() + ")");
  }
  if (filter.row_begin < 0 || filter.row_end <= filter.row_begin)
    throw Error("tap: the row filter [" + std::to_string(filter.row_begin) + ", " + std::to_string(filter.row_end) +
                ") selects no rows");
}

bool Tap::wants(const std::string& name) {
  auto it = wanted_.find(name);
  if (it == wanted_.end()) it = wanted_.emplace(name, std::regex_match(name, re_)).first;
  return it->second;
}

void Tap::publish(const std::string& name, float* data, int64_t n, int64_t cols, int64_t ld, int64_t row0,
                  const int64_t* pos) {
  auto position = [&](int64_t i) { return pos ? pos[i] : row0 + i; };
  if (auto ov = overrides_.find(name); ov != overrides_.end()) {
    const TapRecord& o = ov->second;
    if (o.cols != cols)
      throw Error("replay: checkpoint " + name + " has " + std::to_string(cols) + " columns here but " +
                  std::to_string(o.cols) + " in the reference");
    for (int64_t i = 0; i < n; ++i)
      if (const int64_t j = o.find_row(position(i)); j >= 0) {
        std::memcpy(data + i * ld, o.row(size_t(j)), size_t(cols) * sizeof(float));
        ++overrides_applied_;
      }
  }
  if (!wants(name)) return;
  auto it = index_.find(name);
  if (it == index_.end()) {
    it = index_.emplace(name, records_.size()).first;
    records_.push_back(TapRecord{name, cols, {}, {}});
  }
  TapRecord& r = records_[it->second];
  if (r.cols != cols)
    throw Error("tap: checkpoint " + name + " published with " + std::to_string(cols) + " columns after " +
                std::to_string(r.cols));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = position(i);
    if (p < filter_.row_begin || p >= filter_.row_end) continue;
    r.rows.push_back(p);
    r.data.insert(r.data.end(), data + i * ld, data + i * ld + cols);
  }
}

const TapRecord* Tap::find(const std::string& name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &records_[it->second];
}

void Tap::set_override(TapRecord r) {
  std::string name = r.name;
  overrides_[name] = std::move(r);
}

}  // namespace ckjit
