#include "runtime/json_reader.h"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <unordered_set>

#include "runtime/error.h"

namespace ckjit {

class JsonParser {
 public:
  explicit JsonParser(std::string_view s) : s_(s) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_ws();
    if (i_ != s_.size()) fail("trailing characters");
    return v;
  }

 private:
  static constexpr int kMaxDepth = 64;  // deeper documents are refused: no stack exhaustion
  std::string_view s_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& why) const {
    throw Error("JSON: " + why + " at byte " + std::to_string(i_));
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  char peek() {
    skip_ws();
    if (i_ >= s_.size()) fail("unexpected end");
    return s_[i_];
  }
  void expect_word(std::string_view w) {
    if (s_.substr(i_, w.size()) != w) fail("invalid literal");
    i_ += w.size();
  }

  JsonValue value(int depth) {
    if (depth >= kMaxDepth) fail("nesting too deep");
    JsonValue v;
    const char c = peek();
    if (c == '{') {
      v.kind_ = JsonValue::Kind::Object;
      ++i_;
      if (peek() == '}') { ++i_; return v; }
      std::unordered_set<std::string> seen;
      while (true) {
        if (peek() != '"') fail("expected a member name");
        std::string key = string();
        if (!seen.insert(key).second) fail("duplicate member name '" + key + "'");
        if (peek() != ':') fail("expected ':'");
        ++i_;
        v.object_.emplace_back(std::move(key), value(depth + 1));
        const char d = peek();
        ++i_;
        if (d == '}') break;
        if (d != ',') fail("expected ',' or '}'");
      }
    } else if (c == '[') {
      v.kind_ = JsonValue::Kind::Array;
      ++i_;
      if (peek() == ']') { ++i_; return v; }
      while (true) {
        v.array_.push_back(value(depth + 1));
        const char d = peek();
        ++i_;
        if (d == ']') break;
        if (d != ',') fail("expected ',' or ']'");
      }
    } else if (c == '"') {
      v.kind_ = JsonValue::Kind::String;
      v.string_ = string();
    } else if (c == 't') {
      expect_word("true");
      v.kind_ = JsonValue::Kind::Bool;
      v.bool_ = true;
    } else if (c == 'f') {
      expect_word("false");
      v.kind_ = JsonValue::Kind::Bool;
    } else if (c == 'n') {
      expect_word("null");
    } else {
      v.kind_ = JsonValue::Kind::Number;
      v.number_ = number();
    }
    return v;
  }

  double number() {
    const size_t start = i_;
    auto digits = [&] {
      const size_t d = i_;
      while (i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9') ++i_;
      if (i_ == d) fail("invalid number");
    };
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ + 1 < s_.size() && s_[i_] == '0' && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9') fail("leading zero in number");
    digits();
    if (i_ < s_.size() && s_[i_] == '.') { ++i_; digits(); }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      digits();
    }
    const double d = std::strtod(std::string(s_.substr(start, i_ - start)).c_str(), nullptr);
    if (!std::isfinite(d)) fail("number out of range");
    return d;
  }

  uint32_t hex4() {
    if (i_ + 4 > s_.size()) fail("truncated \\u escape");
    uint32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      const char h = s_[i_++];
      v <<= 4;
      if (h >= '0' && h <= '9') v |= h - '0';
      else if (h >= 'a' && h <= 'f') v |= h - 'a' + 10;
      else if (h >= 'A' && h <= 'F') v |= h - 'A' + 10;
      else fail("invalid \\u escape");
    }
    return v;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) out += char(cp);
    else if (cp < 0x800) { out += char(0xC0 | (cp >> 6)); out += char(0x80 | (cp & 0x3F)); }
    else if (cp < 0x10000) {
      out += char(0xE0 | (cp >> 12)); out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F));
    } else {
      out += char(0xF0 | (cp >> 18)); out += char(0x80 | ((cp >> 12) & 0x3F));
      out += char(0x80 | ((cp >> 6) & 0x3F)); out += char(0x80 | (cp & 0x3F));
    }
  }

  std::string string() {
    ++i_;  // opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) fail("control character in string");
      if (c != '\\') { out += c; continue; }
      if (i_ >= s_.size()) fail("unterminated string");
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.substr(i_, 2) == "\\u") {
            const size_t save = i_;
            i_ += 2;
            const uint32_t lo = hex4();
            if (lo >= 0xDC00 && lo <= 0xDFFF) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            else i_ = save;  // lone high surrogate: kept as is
          }
          append_utf8(out, cp);
          break;
        }
        default: fail("invalid escape");
      }
    }
  }
};

namespace {
const char* kind_name(JsonValue::Kind k) {
  switch (k) {
    case JsonValue::Kind::Null: return "null";
    case JsonValue::Kind::Bool: return "a boolean";
    case JsonValue::Kind::Number: return "a number";
    case JsonValue::Kind::String: return "a string";
    case JsonValue::Kind::Array: return "an array";
    case JsonValue::Kind::Object: return "an object";
  }
  return "?";
}
[[noreturn]] void wrong_kind(std::string_view what, const char* wanted, JsonValue::Kind got) {
  throw Error("JSON: " + std::string(what) + " should be " + wanted + ", not " + kind_name(got));
}
}  // namespace

bool JsonValue::as_bool(std::string_view what) const {
  if (kind_ != Kind::Bool) wrong_kind(what, "a boolean", kind_);
  return bool_;
}
double JsonValue::as_number(std::string_view what) const {
  if (kind_ != Kind::Number) wrong_kind(what, "a number", kind_);
  return number_;
}
int64_t JsonValue::as_int(std::string_view what) const {
  const double d = as_number(what);
  if (d != std::floor(d) || std::fabs(d) > 9.0e15) throw Error("JSON: " + std::string(what) + " should be an integer");
  return static_cast<int64_t>(d);
}
const std::string& JsonValue::as_string(std::string_view what) const {
  if (kind_ != Kind::String) wrong_kind(what, "a string", kind_);
  return string_;
}
const std::vector<JsonValue>& JsonValue::as_array(std::string_view what) const {
  if (kind_ != Kind::Array) wrong_kind(what, "an array", kind_);
  return array_;
}
const std::vector<std::pair<std::string, JsonValue>>& JsonValue::as_object(std::string_view what) const {
  if (kind_ != Kind::Object) wrong_kind(what, "an object", kind_);
  return object_;
}
const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [k, v] : object_)
    if (k == key) return &v;
  return nullptr;
}
const JsonValue& JsonValue::at(std::string_view key, std::string_view what) const {
  if (const JsonValue* v = find(key)) return *v;
  throw Error("JSON: " + std::string(what) + ": missing member '" + std::string(key) + "'");
}

const JsonValue& JsonValue::at(std::string_view key) const {
  if (kind_ != Kind::Object) wrong_kind(key, "a member of an object", kind_);
  if (const JsonValue* v = find(key)) return *v;
  throw Error("JSON: missing member '" + std::string(key) + "'");
}

JsonValue parse_json(std::string_view text) { return JsonParser(text).document(); }

JsonValue parse_json_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open " + path);
  std::ostringstream ss;
  ss << f.rdbuf();
  try {
    return parse_json(ss.str());
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
}

}  // namespace ckjit
