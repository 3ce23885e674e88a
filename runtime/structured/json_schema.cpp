#include "runtime/structured/json_schema.h"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "runtime/error.h"

namespace ckjit::structured {
namespace {

using Json = nlohmann::ordered_json;  // properties are written in the schema's order
using Frag = Nfa::Frag;

constexpr int kMaxIndent = kLimitShift > 0 ? 2 : 20;  // 2 in a fuzzing build (byte_automaton.h): fewer whitespace states
constexpr int kMaxIntDigits = 16, kMaxFracDigits = 16, kMaxExpDigits = 2;  // below 1e116: every parser reads it as a double
constexpr int kMaxNesting = 64;      // schema nesting (hostile schemas end in an error, not a stack overflow)
constexpr int kMaxRepeat = 4096;     // minItems / maxItems / minLength / maxLength above this are refused

[[noreturn]] void refuse(const std::string& path, const std::string& what) {
  throw Error("json schema at " + (path.empty() ? std::string("the root") : path) + ": " + what, ErrorKind::invalid_argument);
}

// Keywords that only describe: accepted and ignored.
const std::set<std::string>& annotations() {
  static const std::set<std::string> s{"title", "description", "default", "examples", "$schema", "$id", "$comment",
                                       "deprecated", "readOnly", "writeOnly", "$defs", "definitions", "strict"};
  return s;
}

const std::set<std::string>& supported() {
  static const std::set<std::string> s{"type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
                                       "minLength", "maxLength", "enum", "const", "anyOf", "$ref"};
  return s;
}

class Compiler {
 public:
  Compiler(Nfa& nfa, const Json& root) : n_(nfa), root_(root) {}

  Frag value(const Json& s, const std::string& path, int nesting) {
    if (nesting > kMaxNesting) refuse(path, "nested deeper than " + std::to_string(kMaxNesting) + " levels");
    if (s.is_boolean()) {
      if (!s.get<bool>()) refuse(path, "the schema false admits no value");
      return any(kAnyDepth);
    }
    if (!s.is_object()) refuse(path, "a schema must be an object or a boolean");
    for (const auto& [k, v] : s.items())
      if (!supported().count(k) && !annotations().count(k)) refuse(path, "keyword '" + k + "' is not supported by structured output");
    // $ref, const, enum and anyOf stand alone (besides annotations; enum and const may carry a type,
    // which their values must have): other constraints beside them would not be enforced.
    for (const char* alone : {"$ref", "const", "enum", "anyOf"}) {
      if (!s.contains(alone)) continue;
      for (const auto& [k, v] : s.items())
        if (k != alone && !annotations().count(k) && !(k == "type" && (std::string(alone) == "enum" || std::string(alone) == "const")))
          refuse(path, "'" + k + "' beside '" + alone + "' is not supported");
    }
    if (s.contains("$ref")) return ref(s, path, nesting);
    if (s.contains("const") || s.contains("enum")) {
      const bool is_const = s.contains("const");
      const Json values = is_const ? Json::array({s["const"]}) : s["enum"];
      if (!values.is_array() || values.empty()) refuse(path + "/enum", "must be a non-empty array");
      std::vector<Frag> options;
      for (const Json& v : values)
        if (!s.contains("type") || has_type(v, s["type"], path)) options.push_back(n_.bytes(v.dump()));
      if (options.empty()) refuse(path, std::string("no value of '") + (is_const ? "const" : "enum") + "' has the schema's type");
      return n_.alt(options);
    }
    if (s.contains("anyOf")) {
      const Json& a = s["anyOf"];
      if (!a.is_array() || a.empty()) refuse(path + "/anyOf", "must be a non-empty array");
      std::vector<Frag> options;
      for (size_t i = 0; i < a.size(); ++i) options.push_back(value(a[i], path + "/anyOf/" + std::to_string(i), nesting + 1));
      return n_.alt(options);
    }
    if (!s.contains("type")) {
      // The type the keywords imply (each keyword applies to one type: the others would ignore it).
      if (s.contains("properties") || s.contains("additionalProperties") || s.contains("required")) return typed("object", s, path, nesting);
      if (s.contains("items") || s.contains("minItems") || s.contains("maxItems")) return typed("array", s, path, nesting);
      if (s.contains("minLength") || s.contains("maxLength")) return typed("string", s, path, nesting);
      return any(kAnyDepth);
    }
    const Json& t = s["type"];
    if (t.is_string()) return typed(t.get<std::string>(), s, path, nesting);
    if (!t.is_array() || t.empty()) refuse(path + "/type", "must be a type name or a non-empty list of them");
    std::vector<Frag> options;
    for (const Json& one : t) {
      if (!one.is_string()) refuse(path + "/type", "must list type names");
      options.push_back(typed(one.get<std::string>(), s, path, nesting));
    }
    return n_.alt(options);
  }

  // Whether v is of the type (a name or a list of names).
  static bool has_type(const Json& v, const Json& type, const std::string& path) {
    auto one = [&](const Json& t) {
      if (!t.is_string()) refuse(path + "/type", "must be a type name or a list of them");
      const std::string n = t.get<std::string>();
      return n == "string" ? v.is_string() : n == "integer" ? v.is_number_integer() : n == "number" ? v.is_number()
           : n == "boolean" ? v.is_boolean() : n == "null" ? v.is_null() : n == "object" ? v.is_object()
           : n == "array" ? v.is_array() : (refuse(path + "/type", "unknown type '" + n + "'"), false);
    };
    if (!type.is_array()) return one(type);
    for (const Json& t : type)
      if (one(t)) return true;
    return false;
  }

  // Any JSON value, containers nested at most `depth` deep.
  Frag any(int depth) {
    std::vector<Frag> options{string(0, -1), number(false), n_.bytes("true"), n_.bytes("false"), n_.bytes("null")};
    if (depth > 0) {
      options.push_back(object_map([&] { return any(depth - 1); }));
      options.push_back(array_loop([&] { return any(depth - 1); }));
    }
    return n_.alt(options);
  }

 private:
  // llama.cpp's JSON whitespace: nothing, one space, or one newline and up to 20 spaces or tabs of indent.
  Frag ws() {
    Frag indent = n_.repeat([&] { return n_.ranges({{' ', ' '}, {'\t', '\t'}}); }, 0, kMaxIndent);
    return n_.optional(n_.alt({n_.bytes(" "), n_.seq(n_.bytes("\n"), indent)}));
  }

  Frag typed(const std::string& type, const Json& s, const std::string& path, int nesting) {
    if (type == "string") return string(count(s, "minLength", path, 0), count(s, "maxLength", path, -1));
    if (type == "integer") return number(true);
    if (type == "number") return number(false);
    if (type == "boolean") return n_.alt({n_.bytes("true"), n_.bytes("false")});
    if (type == "null") return n_.bytes("null");
    if (type == "object") return object(s, path, nesting);
    if (type == "array") return array(s, path, nesting);
    refuse(path + "/type", "unknown type '" + type + "'");
  }

  static int count(const Json& s, const char* key, const std::string& path, int absent) {
    if (!s.contains(key)) return absent;
    const Json& v = s[key];
    if (!v.is_number_integer() || v.get<int64_t>() < 0) refuse(path + "/" + key, "must be a non-negative integer");
    if (v.get<int64_t>() > kMaxRepeat) refuse(path + "/" + key, "above " + std::to_string(kMaxRepeat) + " is not supported");
    return int(v.get<int64_t>());
  }

  Frag string(int lo, int hi) {
    if (hi >= 0 && hi < lo) throw Error("json schema: maxLength is below minLength", ErrorKind::invalid_argument);
    Frag body = n_.repeat([&] { return character(); }, lo, hi);
    return n_.seq(n_.seq(n_.bytes("\""), body), n_.bytes("\""));
  }

  // One JSON string character: an escape or one UTF-8 encoded code point other than '"', '\' and
  // the controls.
  Frag character() {
    using R = std::vector<std::pair<uint8_t, uint8_t>>;
    auto cont = [&](int k) { return n_.repeat([&] { return n_.ranges({{0x80, 0xBF}}); }, k, k); };
    auto hex = [&] { return n_.ranges({{'0', '9'}, {'a', 'f'}, {'A', 'F'}}); };
    std::vector<Frag> o;
    o.push_back(n_.ranges(R{{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0x7F}}));
    o.push_back(n_.seq(n_.bytes("\\"), n_.ranges(R{{'"', '"'}, {'\\', '\\'}, {'/', '/'}, {'b', 'b'}, {'f', 'f'}, {'n', 'n'}, {'r', 'r'}, {'t', 't'}})));
    // \uXXXX outside the surrogates (strict parsers refuse a lone one; others come as UTF-8).
    Frag first_two = n_.alt({n_.seq(n_.ranges(R{{'0', '9'}, {'a', 'c'}, {'A', 'C'}, {'e', 'f'}, {'E', 'F'}}), hex()),
                              n_.seq(n_.ranges(R{{'d', 'd'}, {'D', 'D'}}), n_.ranges(R{{'0', '7'}}))});
    o.push_back(n_.seq(n_.seq(n_.bytes("\\u"), first_two), n_.repeat(hex, 2, 2)));
    o.push_back(n_.seq(n_.ranges(R{{0xC2, 0xDF}}), cont(1)));
    o.push_back(n_.seq(n_.seq(n_.ranges(R{{0xE0, 0xE0}}), n_.ranges(R{{0xA0, 0xBF}})), cont(1)));
    o.push_back(n_.seq(n_.ranges(R{{0xE1, 0xEC}, {0xEE, 0xEF}}), cont(2)));
    o.push_back(n_.seq(n_.seq(n_.ranges(R{{0xED, 0xED}}), n_.ranges(R{{0x80, 0x9F}})), cont(1)));
    o.push_back(n_.seq(n_.seq(n_.ranges(R{{0xF0, 0xF0}}), n_.ranges(R{{0x90, 0xBF}})), cont(2)));
    o.push_back(n_.seq(n_.ranges(R{{0xF1, 0xF3}}), cont(3)));
    o.push_back(n_.seq(n_.seq(n_.ranges(R{{0xF4, 0xF4}}), n_.ranges(R{{0x80, 0x8F}})), cont(2)));
    return n_.alt(o);
  }

  Frag number(bool integer) {
    auto digit = [&] { return n_.ranges({{'0', '9'}}); };
    Frag f = n_.optional(n_.bytes("-"));
    Frag whole = n_.alt({n_.bytes("0"), n_.seq(n_.ranges({{'1', '9'}}), n_.repeat(digit, 0, kMaxIntDigits - 1))});
    f = n_.seq(f, whole);
    if (integer) return f;
    f = n_.seq(f, n_.optional(n_.seq(n_.bytes("."), n_.repeat(digit, 1, kMaxFracDigits))));
    Frag exp = n_.seq(n_.seq(n_.ranges({{'e', 'e'}, {'E', 'E'}}), n_.optional(n_.ranges({{'+', '+'}, {'-', '-'}}))),
                      n_.repeat(digit, 1, kMaxExpDigits));
    return n_.seq(f, n_.optional(exp));
  }

  // open (item (',' item)*)? close with one copy of the item (a loop), whitespace around each item.
  template <class Make>
  Frag list_loop(const char* open_text, const char* close_text, Make make_item) {
    const int item = n_.add_state(), after = n_.add_state(), end = n_.add_state();
    Frag open = n_.seq(n_.bytes(open_text), ws());
    Frag empty_close = n_.bytes(close_text);
    n_.epsilon(open.end, empty_close.start), n_.epsilon(empty_close.end, end);
    n_.epsilon(open.end, item);
    Frag v = n_.seq(make_item(), ws());
    n_.epsilon(item, v.start), n_.epsilon(v.end, after);
    Frag comma = n_.seq(n_.bytes(","), ws());
    n_.epsilon(after, comma.start), n_.epsilon(comma.end, item);
    Frag close = n_.bytes(close_text);
    n_.epsilon(after, close.start), n_.epsilon(close.end, end);
    return {open.start, end};
  }

  // '{' (key ':' value (',' key ':' value)*)? '}', keys any string.
  template <class Make>
  Frag object_map(Make make_value) {
    return list_loop("{", "}", [&] { return n_.seq(n_.seq(n_.seq(n_.seq(string(0, -1), ws()), n_.bytes(":")), ws()), make_value()); });
  }

  // '[' (value (',' value)*)? ']'.
  template <class Make>
  Frag array_loop(Make make_item) {
    return list_loop("[", "]", make_item);
  }

  Frag object(const Json& s, const std::string& path, int nesting) {
    const Json* props = s.contains("properties") ? &s["properties"] : nullptr;
    if (props && !props->is_object()) refuse(path + "/properties", "must be an object");
    std::set<std::string> required;
    if (s.contains("required")) {
      const Json& r = s["required"];
      if (!r.is_array()) refuse(path + "/required", "must be an array of names");
      for (const Json& name : r) {
        if (!name.is_string()) refuse(path + "/required", "must be an array of names");
        if (!props || !props->contains(name.get<std::string>()))
          refuse(path + "/required", "'" + name.get<std::string>() + "' is not among the properties");
        required.insert(name.get<std::string>());
      }
    }
    const Json* extra = s.contains("additionalProperties") ? &s["additionalProperties"] : nullptr;
    if (extra && !extra->is_boolean() && !extra->is_object()) refuse(path + "/additionalProperties", "must be a boolean or a schema");
    if (!props || props->empty()) {
      if (extra && extra->is_boolean() && !extra->get<bool>()) return n_.seq(n_.seq(n_.bytes("{"), ws()), n_.bytes("}"));
      if (extra && extra->is_object()) return object_map([&] { return value(*extra, path + "/additionalProperties", nesting + 1); });
      return object_map([&] { return any(kAnyDepth - 1); });
    }
    // Properties in order; none (E) or some (S) written before each: a comma only after the first.
    Frag open = n_.seq(n_.bytes("{"), ws());
    int e = open.end, sm = n_.add_state();
    for (const auto& item : props->items()) {
      const std::string& name = item.key();  // (clang: structured bindings cannot be captured in C++20)
      const Json& sub = item.value();
      const std::string sub_path = path + "/properties/" + name;
      auto member = [&] {
        return n_.seq(n_.seq(n_.seq(n_.seq(n_.bytes(Json(name).dump()), ws()), n_.bytes(":")), ws()),
                      n_.seq(value(sub, sub_path, nesting + 1), ws()));
      };
      const int e2 = n_.add_state(), s2 = n_.add_state();
      Frag first = member();
      n_.epsilon(e, first.start), n_.epsilon(first.end, s2);
      Frag later = n_.seq(n_.seq(n_.bytes(","), ws()), member());
      n_.epsilon(sm, later.start), n_.epsilon(later.end, s2);
      if (!required.count(name)) n_.epsilon(e, e2), n_.epsilon(sm, s2);
      e = e2, sm = s2;
    }
    const int end = n_.add_state();
    Frag close_e = n_.bytes("}"), close_s = n_.bytes("}");
    n_.epsilon(e, close_e.start), n_.epsilon(close_e.end, end);
    n_.epsilon(sm, close_s.start), n_.epsilon(close_s.end, end);
    return {open.start, end};
  }

  Frag array(const Json& s, const std::string& path, int nesting) {
    const int lo = count(s, "minItems", path, 0), hi = count(s, "maxItems", path, -1);
    if (hi >= 0 && hi < lo) refuse(path, "maxItems is below minItems");
    const Json any_item = Json::object();
    const Json& items = s.contains("items") ? s["items"] : any_item;
    if (items.is_array()) refuse(path + "/items", "tuple items (an array) are not supported");
    auto item = [&] { return value(items, path + "/items", nesting + 1); };
    if (lo == 0 && hi < 0) return array_loop(item);
    Frag open = n_.seq(n_.bytes("["), ws());
    Frag close = n_.bytes("]");
    if (hi == 0) return n_.seq(open, close);
    // item (',' item){lo-1, hi-1}, optional as a whole when lo = 0.
    auto later = [&] { return n_.seq(n_.seq(n_.bytes(","), ws()), n_.seq(item(), ws())); };
    Frag list = n_.seq(n_.seq(item(), ws()), n_.repeat(later, std::max(0, lo - 1), hi < 0 ? -1 : hi - 1));
    if (lo == 0) list = n_.optional(list);
    return n_.seq(n_.seq(open, list), close);
  }

  Frag ref(const Json& s, const std::string& path, int nesting) {
    if (!s["$ref"].is_string()) refuse(path + "/$ref", "must be a string");
    const std::string r = s["$ref"].get<std::string>();
    if (r.rfind("#/", 0) != 0) refuse(path + "/$ref", "only local references (#/$defs/...) are supported, not '" + r + "'");
    if (std::find(active_.begin(), active_.end(), r) != active_.end())
      refuse(path + "/$ref", "'" + r + "' refers back to itself: recursive schemas are not supported");
    const Json* target = &root_;
    size_t at = 2;
    while (at <= r.size()) {
      size_t next = r.find('/', at);
      if (next == std::string::npos) next = r.size();
      std::string part = r.substr(at, next - at);
      for (size_t p = 0; (p = part.find("~1", p)) != std::string::npos; ++p) part.replace(p, 2, "/");
      for (size_t p = 0; (p = part.find("~0", p)) != std::string::npos; ++p) part.replace(p, 2, "~");
      if (!target->is_object() || !target->contains(part)) refuse(path + "/$ref", "'" + r + "' names nothing in the schema");
      target = &(*target)[part];
      at = next + 1;
    }
    active_.push_back(r);
    Frag f = value(*target, r.substr(1), nesting + 1);
    active_.pop_back();
    return f;
  }

  Nfa& n_;
  const Json& root_;
  std::vector<std::string> active_;  // $refs being expanded (recursion check)
};

}  // namespace

Dfa compile_json_schema(std::string_view schema_json) {
  Json root;
  try {
    root = Json::parse(schema_json);
  } catch (const std::exception& e) {
    throw Error(std::string("json schema: not valid JSON (") + e.what() + ")", ErrorKind::invalid_argument);
  }
  Nfa nfa;
  Compiler c(nfa, root);
  const Frag whole = c.value(root, "", 0);
  return Dfa::from_nfa(nfa, whole, kMaxDfaStates);
}

Dfa any_json_object() {
  return compile_json_schema(R"({"type": "object"})");
}

}  // namespace ckjit::structured
