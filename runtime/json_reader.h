// Minimal JSON reader (RFC 8259): parses a document into a tree of JsonValue. Used for Hugging Face
// tokenizer files and ckjit profiles. Throws ckjit::Error with the byte offset on malformed input;
// nesting deeper than 64 and duplicate member names are refused (hostile files stay harmless).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckjit {

class JsonValue {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::Null; }
  bool is_string() const { return kind_ == Kind::String; }
  bool is_array() const { return kind_ == Kind::Array; }
  bool is_object() const { return kind_ == Kind::Object; }

  // Typed access; each throws ckjit::Error naming `what` when the kind does not match.
  bool as_bool(std::string_view what = "value") const;
  double as_number(std::string_view what = "value") const;
  int64_t as_int(std::string_view what = "value") const;  // must be an integral number
  const std::string& as_string(std::string_view what = "value") const;
  const std::vector<JsonValue>& as_array(std::string_view what = "value") const;
  const std::vector<std::pair<std::string, JsonValue>>& as_object(std::string_view what = "value") const;

  // Object member or nullptr (also nullptr if this is not an object).
  const JsonValue* find(std::string_view key) const;
  // Object member; throws ckjit::Error if missing.
  const JsonValue& at(std::string_view key) const;
  // Same, naming `what` (e.g. "profile.entries[2]") in the error.
  const JsonValue& at(std::string_view key, std::string_view what) const;

 private:
  friend class JsonParser;
  Kind kind_ = Kind::Null;
  bool bool_ = false;
  double number_ = 0;
  std::string string_;
  std::vector<JsonValue> array_;
  std::vector<std::pair<std::string, JsonValue>> object_;
};

JsonValue parse_json(std::string_view text);
JsonValue parse_json_file(const std::string& path);

}  // namespace ckjit
