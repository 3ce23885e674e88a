#include "runtime/json_reader.h"

#include <cmath>
#include <cstdlib>

#include "runtime/error.h"

namespace ckjit {

JsonValue JsonValue::make_bool(bool b) { JsonValue v; v.kind_ = Kind::boolean; v.b_ = b; return v; }
JsonValue JsonValue::make_number(double d) { JsonValue v; v.kind_ = Kind::number; v.d_ = d; return v; }
JsonValue JsonValue::make_string(std::string s) { JsonValue v; v.kind_ = Kind::string; v.s_ = std::move(s); return v; }
JsonValue JsonValue::make_array(std::vector<JsonValue> a) { JsonValue v; v.kind_ = Kind::array; v.a_ = std::move(a); return v; }
JsonValue JsonValue::make_object(std::map<std::string, JsonValue> o) {
  JsonValue v;
  v.kind_ = Kind::object;
  v.o_ = std::move(o);
  return v;
}

namespace {
const char* kind_name(JsonValue::Kind k) {
  switch (k) {
    case JsonValue::Kind::null: return "null";
    case JsonValue::Kind::boolean: return "a boolean";
    case JsonValue::Kind::number: return "a number";
    case JsonValue::Kind::string: return "a string";
    case JsonValue::Kind::array: return "an array";
    case JsonValue::Kind::object: return "an object";
  }
  return "?";
}
[[noreturn]] void wrong(const std::string& what, const char* want, JsonValue::Kind got) {
  throw Error(what + ": expected " + want + ", got " + kind_name(got));
}
}  // namespace

bool JsonValue::as_bool(const std::string& what) const {
  if (kind_ != Kind::boolean) wrong(what, "a boolean", kind_);
  return b_;
}
double JsonValue::as_number(const std::string& what) const {
  if (kind_ != Kind::number) wrong(what, "a number", kind_);
  return d_;
}
int64_t JsonValue::as_int(const std::string& what) const {
  double d = as_number(what);
  if (d != std::floor(d) || std::fabs(d) > 9007199254740992.0) throw Error(what + ": expected an integer");
  return int64_t(d);
}
const std::string& JsonValue::as_string(const std::string& what) const {
  if (kind_ != Kind::string) wrong(what, "a string", kind_);
  return s_;
}
const std::vector<JsonValue>& JsonValue::as_array(const std::string& what) const {
  if (kind_ != Kind::array) wrong(what, "an array", kind_);
  return a_;
}
const std::map<std::string, JsonValue>& JsonValue::as_object(const std::string& what) const {
  if (kind_ != Kind::object) wrong(what, "an object", kind_);
  return o_;
}
const JsonValue& JsonValue::at(const std::string& key, const std::string& what) const {
  const auto& o = as_object(what);
  auto it = o.find(key);
  if (it == o.end()) throw Error(what + ": missing \"" + key + "\"");
  return it->second;
}
const JsonValue* JsonValue::find(const std::string& key) const {
  if (kind_ != Kind::object) return nullptr;
  auto it = o_.find(key);
  return it == o_.end() ? nullptr : &it->second;
}

namespace {

class Parser {
 public:
  Parser(const std::string& t, std::size_t max_depth) : t_(t), max_depth_(max_depth) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_ws();
    if (i_ != t_.size()) fail("trailing characters after the JSON value");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& why) { throw Error("JSON at byte " + std::to_string(i_) + ": " + why); }
  void skip_ws() {
    while (i_ < t_.size() && (t_[i_] == ' ' || t_[i_] == '\t' || t_[i_] == '\n' || t_[i_] == '\r')) ++i_;
  }
  bool eat(char c) {
    skip_ws();
    if (i_ < t_.size() && t_[i_] == c) { ++i_; return true; }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  void literal(const char* word) {
    for (const char* p = word; *p; ++p, ++i_)
      if (i_ >= t_.size() || t_[i_] != *p) fail(std::string("bad literal, expected ") + word);
  }

  JsonValue value(std::size_t depth) {
    skip_ws();
    if (i_ >= t_.size()) fail("unexpected end of input");
    char c = t_[i_];
    if ((c == '{' || c == '[') && depth >= max_depth_) fail("nesting deeper than " + std::to_string(max_depth_));
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return JsonValue::make_string(string());
    if (c == 't') { literal("true"); return JsonValue::make_bool(true); }
    if (c == 'f') { literal("false"); return JsonValue::make_bool(false); }
    if (c == 'n') { literal("null"); return JsonValue(); }
    if (c == '-' || (c >= '0' && c <= '9')) return JsonValue::make_number(number());
    fail(std::string("unexpected character '") + c + "'");
  }

  JsonValue object(std::size_t depth) {
    ++i_;
    std::map<std::string, JsonValue> o;
    if (eat('}')) return JsonValue::make_object(std::move(o));
    do {
      skip_ws();
      if (i_ >= t_.size() || t_[i_] != '"') fail("expected a string key");
      std::string k = string();
      expect(':');
      JsonValue v = value(depth + 1);
      if (!o.emplace(k, std::move(v)).second) fail("duplicate key \"" + k + "\"");
    } while (eat(','));
    expect('}');
    return JsonValue::make_object(std::move(o));
  }

  JsonValue array(std::size_t depth) {
    ++i_;
    std::vector<JsonValue> a;
    if (eat(']')) return JsonValue::make_array(std::move(a));
    do a.push_back(value(depth + 1));
    while (eat(','));
    expect(']');
    return JsonValue::make_array(std::move(a));
  }

  unsigned hex4() {
    if (i_ + 4 > t_.size()) fail("short \\u escape");
    unsigned v = 0;
    for (int n = 0; n < 4; ++n) {
      char c = t_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= unsigned(c - '0');
      else if (c >= 'a' && c <= 'f') v |= unsigned(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= unsigned(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }
  void put_utf8(std::string& out, unsigned cp) {
    if (cp < 0x80) out += char(cp);
    else if (cp < 0x800) out += char(0xC0 | (cp >> 6)), out += char(0x80 | (cp & 0x3F));
    else if (cp < 0x10000)
      out += char(0xE0 | (cp >> 12)), out += char(0x80 | ((cp >> 6) & 0x3F)), out += char(0x80 | (cp & 0x3F));
    else
      out += char(0xF0 | (cp >> 18)), out += char(0x80 | ((cp >> 12) & 0x3F)), out += char(0x80 | ((cp >> 6) & 0x3F)),
          out += char(0x80 | (cp & 0x3F));
  }

  std::string string() {
    ++i_;  // opening quote
    std::string out;
    for (;;) {
      if (i_ >= t_.size()) fail("unterminated string");
      unsigned char c = (unsigned char)t_[i_++];
      if (c == '"') return out;
      if (c < 0x20) fail("control character in string");
      if (c != '\\') { out += char(c); continue; }
      if (i_ >= t_.size()) fail("unterminated escape");
      char e = t_[i_++];
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
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00) {
            if (i_ + 2 > t_.size() || t_[i_] != '\\' || t_[i_ + 1] != 'u') fail("lone high surrogate");
            i_ += 2;
            unsigned lo = hex4();
            if (lo < 0xDC00 || lo >= 0xE000) fail("bad low surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp < 0xE000) {
            fail("lone low surrogate");
          }
          put_utf8(out, cp);
          break;
        }
        default: fail(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  double number() {
    std::size_t start = i_;
    auto digits = [&] {
      std::size_t d = i_;
      while (i_ < t_.size() && t_[i_] >= '0' && t_[i_] <= '9') ++i_;
      return i_ - d;
    };
    if (t_[i_] == '-') ++i_;
    if (i_ < t_.size() && t_[i_] == '0') ++i_;
    else if (digits() == 0) fail("bad number");
    if (i_ < t_.size() && t_[i_] == '.') {
      ++i_;
      if (digits() == 0) fail("bad number: digits expected after '.'");
    }
    if (i_ < t_.size() && (t_[i_] == 'e' || t_[i_] == 'E')) {
      ++i_;
      if (i_ < t_.size() && (t_[i_] == '+' || t_[i_] == '-')) ++i_;
      if (digits() == 0) fail("bad number: exponent digits expected");
    }
    std::string text = t_.substr(start, i_ - start);
    double d = std::strtod(text.c_str(), nullptr);
    if (!std::isfinite(d)) fail("number out of range");
    return d;
  }

  const std::string& t_;
  std::size_t max_depth_;
  std::size_t i_ = 0;
};

}  // namespace

JsonValue parse_json(const std::string& text, std::size_t max_depth) { return Parser(text, max_depth).document(); }

}  // namespace ckjit
