#pragma once
// Minimal streaming JSON writer (header-only) for `--json` outputs, reports and profiles.
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace ckjit {

class JsonWriter {
 public:
  JsonWriter& begin_object() { value_prefix(); out_ += '{'; first_.push_back(true); return *this; }
  JsonWriter& end_object() { first_.pop_back(); out_ += '}'; return *this; }
  JsonWriter& begin_array() { value_prefix(); out_ += '['; first_.push_back(true); return *this; }
  JsonWriter& end_array() { first_.pop_back(); out_ += ']'; return *this; }
  JsonWriter& key(const std::string& k) {
    comma();
    put_string(k);
    out_ += ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(const std::string& s) { value_prefix(); put_string(s); return *this; }
  JsonWriter& value(const char* s) { return value(std::string(s)); }
  JsonWriter& value(bool b) { value_prefix(); out_ += b ? "true" : "false"; return *this; }
  JsonWriter& value(long long v) { value_prefix(); out_ += std::to_string(v); return *this; }
  JsonWriter& value(int v) { return value((long long)v); }
  JsonWriter& value(long v) { return value((long long)v); }
  JsonWriter& value(unsigned long v) { return value((long long)v); }
  JsonWriter& value(unsigned long long v) { value_prefix(); out_ += std::to_string(v); return *this; }
  JsonWriter& value(double v) {
    value_prefix();
    if (!std::isfinite(v)) { out_ += "null"; return *this; }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    out_ += buf;
    return *this;
  }
  JsonWriter& null() { value_prefix(); out_ += "null"; return *this; }
  template <class T>
  JsonWriter& field(const std::string& k, const T& v) { key(k); return value(v); }
  const std::string& str() const { return out_; }

 private:
  void comma() {
    if (!first_.empty()) {
      if (!first_.back()) out_ += ',';
      first_.back() = false;
    }
  }
  void value_prefix() {
    if (after_key_) { after_key_ = false; return; }
    comma();
  }
  void put_string(const std::string& s) {
    out_ += '"';
    for (unsigned char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\r': out_ += "\\r"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out_ += buf;
          } else {
            out_ += char(c);
          }
      }
    }
    out_ += '"';
  }
  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

}  // namespace ckjit
