#include "runtime/json.h"

#include <cmath>
#include <fstream>
#include <sstream>
#include <unordered_set>
#include <vector>

#include "runtime/error.h"

namespace ckjit {

namespace {

constexpr int kMaxDepth = 64;  // deeper documents are refused (the library's dump and compare recurse)

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

const nlohmann::json& null_json() {
  static const nlohmann::json null;
  return null;
}

// Refuses duplicate member names and deep nesting while the document is built (the callback sees
// every key; one set of names per open object).
struct StrictParse {
  std::vector<std::unordered_set<std::string>> open;
  bool operator()(int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (depth >= kMaxDepth) throw Error("JSON: nesting deeper than " + std::to_string(kMaxDepth));  // depth counts from 0
    if (event == E::object_start) open.emplace_back();
    else if (event == E::object_end) open.pop_back();
    else if (event == E::key && !open.empty() && !open.back().insert(parsed.get<std::string>()).second)
      throw Error("JSON: duplicate member name '" + parsed.get<std::string>() + "'");
    return true;
  }
};

}  // namespace

std::string dump_json(const OrderedJson& j, int indent) { return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace); }

JsonValue::JsonValue() : node_(&null_json()) {}

JsonValue::Kind JsonValue::kind() const {
  switch (node_->type()) {
    case nlohmann::json::value_t::boolean: return Kind::Bool;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
    case nlohmann::json::value_t::number_float: return Kind::Number;
    case nlohmann::json::value_t::string: return Kind::String;
    case nlohmann::json::value_t::array: return Kind::Array;
    case nlohmann::json::value_t::object: return Kind::Object;
    default: return Kind::Null;
  }
}

bool JsonValue::as_bool(std::string_view what) const {
  if (!node_->is_boolean()) wrong_kind(what, "a boolean", kind());
  return node_->get<bool>();
}

double JsonValue::as_number(std::string_view what) const {
  if (!node_->is_number()) wrong_kind(what, "a number", kind());
  return node_->get<double>();
}

int64_t JsonValue::as_int(std::string_view what) const {
  if (node_->is_number_integer() && !node_->is_number_unsigned()) return node_->get<int64_t>();
  if (node_->is_number_unsigned() && node_->get<uint64_t>() <= uint64_t(INT64_MAX)) return int64_t(node_->get<uint64_t>());
  const double d = as_number(what);
  if (d != std::floor(d) || std::fabs(d) > 9.0e15) throw Error("JSON: " + std::string(what) + " should be an integer");
  return static_cast<int64_t>(d);
}

const std::string& JsonValue::as_string(std::string_view what) const {
  if (!node_->is_string()) wrong_kind(what, "a string", kind());
  return node_->get_ref<const std::string&>();
}

JsonValue::Array JsonValue::as_array(std::string_view what) const {
  if (!node_->is_array()) wrong_kind(what, "an array", kind());
  return Array(doc_, node_);
}

JsonValue::Object JsonValue::as_object(std::string_view what) const {
  if (!node_->is_object()) wrong_kind(what, "an object", kind());
  return Object(doc_, node_);
}

JsonValue JsonValue::Array::at(size_t i) const {
  if (i >= size()) throw Error("JSON: element " + std::to_string(i) + " of an array of " + std::to_string(size()));
  return (*this)[i];
}

std::optional<JsonValue> JsonValue::find(std::string_view key) const {
  if (!node_->is_object()) return std::nullopt;
  const auto it = node_->find(key);
  if (it == node_->end()) return std::nullopt;
  return JsonValue(doc_, &*it);
}

JsonValue JsonValue::at(std::string_view key, std::string_view what) const {
  if (!node_->is_object()) wrong_kind(what, "an object", kind());
  if (auto v = find(key)) return *v;
  throw Error("JSON: " + std::string(what) + ": missing member '" + std::string(key) + "'");
}

JsonValue JsonValue::at(std::string_view key) const {
  if (!node_->is_object()) wrong_kind(key, "a member of an object", kind());
  if (auto v = find(key)) return *v;
  throw Error("JSON: missing member '" + std::string(key) + "'");
}

JsonValue parse_json(std::string_view text) {
  auto doc = std::make_shared<nlohmann::json>();
  try {
    *doc = nlohmann::json::parse(text.begin(), text.end(), StrictParse{});
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("JSON: malformed at byte " + std::to_string(e.byte) + " (" + e.what() + ")");
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("JSON: ") + e.what());
  }
  const nlohmann::json* root = doc.get();
  return JsonValue(std::move(doc), root);
}

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
