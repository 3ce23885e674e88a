#pragma once
// Minimal strict JSON reader (RFC 8259) for profiles and other files ckjit writes itself.
// Bad input raises ckjit::Error with the byte offset; nesting depth and size are bounded so a
// hostile file cannot exhaust the stack.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ckjit {

class JsonValue {
 public:
  enum class Kind { null, boolean, number, string, array, object };

  JsonValue() = default;
  static JsonValue make_bool(bool b);
  static JsonValue make_number(double d);
  static JsonValue make_string(std::string s);
  static JsonValue make_array(std::vector<JsonValue> a);
  static JsonValue make_object(std::map<std::string, JsonValue> o);

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::null; }

  // Typed access; a wrong kind raises ckjit::Error naming `what` (e.g. "profile.entries[2].m").
  bool as_bool(const std::string& what) const;
  double as_number(const std::string& what) const;
  int64_t as_int(const std::string& what) const;  // must be integral and within +-2^53
  const std::string& as_string(const std::string& what) const;
  const std::vector<JsonValue>& as_array(const std::string& what) const;
  const std::map<std::string, JsonValue>& as_object(const std::string& what) const;
  // Member of an object: missing keys raise ckjit::Error; find() returns nullptr instead.
  const JsonValue& at(const std::string& key, const std::string& what) const;
  const JsonValue* find(const std::string& key) const;

 private:
  Kind kind_ = Kind::null;
  bool b_ = false;
  double d_ = 0;
  std::string s_;
  std::vector<JsonValue> a_;
  std::map<std::string, JsonValue> o_;
};

// Parses one JSON document (surrounding whitespace allowed). Duplicate keys are an error; at most
// max_depth arrays/objects may nest.
JsonValue parse_json(const std::string& text, std::size_t max_depth = 64);

}  // namespace ckjit
