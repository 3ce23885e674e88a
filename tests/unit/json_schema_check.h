// A JSON Schema validator for the subset structured output compiles (runtime/structured/json_schema.h),
// written separately from the compiler so that generated texts are checked by other code.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace schemacheck {

using Json = nlohmann::ordered_json;

inline size_t code_points(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// "" when v satisfies s; otherwise why not.
inline std::string why_not(const Json& v, const Json& s, const Json& root) {
  if (s.is_boolean()) return s.get<bool>() ? "" : "false schema";
  if (s.contains("$ref")) {
    const std::string r = s["$ref"].get<std::string>();
    return why_not(v, root.at(Json::json_pointer(r.substr(1))), root);
  }
  if (s.contains("const")) return v == s["const"] ? "" : "not the const";
  if (s.contains("enum")) {
    for (const Json& e : s["enum"])
      if (v == e) return "";
    return "not in the enum";
  }
  if (s.contains("anyOf")) {
    for (const Json& o : s["anyOf"])
      if (why_not(v, o, root).empty()) return "";
    return "no anyOf branch";
  }
  auto type_ok = [&](const std::string& t) {
    if (t == "string") return v.is_string();
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    if (t == "boolean") return v.is_boolean();
    if (t == "null") return v.is_null();
    if (t == "object") return v.is_object();
    if (t == "array") return v.is_array();
    return false;
  };
  if (s.contains("type")) {
    bool ok = false;
    if (s["type"].is_string()) ok = type_ok(s["type"].get<std::string>());
    else
      for (const Json& t : s["type"]) ok = ok || type_ok(t.get<std::string>());
    if (!ok) return "wrong type: " + v.dump();
  }
  if (v.is_string()) {
    const size_t n = code_points(v.get<std::string>());
    if (s.contains("minLength") && n < s["minLength"].get<size_t>()) return "shorter than minLength";
    if (s.contains("maxLength") && n > s["maxLength"].get<size_t>()) return "longer than maxLength";
  }
  if (v.is_object()) {
    if (s.contains("required"))
      for (const Json& r : s["required"])
        if (!v.contains(r.get<std::string>())) return "missing " + r.get<std::string>();
    for (const auto& [k, x] : v.items()) {
      if (s.contains("properties") && s["properties"].contains(k)) {
        const std::string w = why_not(x, s["properties"][k], root);
        if (!w.empty()) return k + ": " + w;
      } else if (s.contains("additionalProperties")) {
        const std::string w = why_not(x, s["additionalProperties"], root);
        if (!w.empty()) return "extra key " + k + ": " + w;
      }
    }
  }
  if (v.is_array()) {
    if (s.contains("minItems") && v.size() < s["minItems"].get<size_t>()) return "fewer than minItems";
    if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) return "more than maxItems";
    if (s.contains("items"))
      for (const Json& x : v) {
        const std::string w = why_not(x, s["items"], root);
        if (!w.empty()) return "item: " + w;
      }
  }
  return "";
}

// "" when text parses as JSON and satisfies the schema.
inline std::string check(const std::string& text, const std::string& schema) {
  Json v;
  try {
    v = Json::parse(text);
  } catch (const std::exception& e) {
    return std::string("not JSON: ") + e.what();
  }
  const Json s = Json::parse(schema);
  return why_not(v, s, s);
}

}  // namespace schemacheck
