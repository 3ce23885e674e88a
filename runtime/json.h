// JSON through nlohmann-json (Debian nlohmann-json3-dev), for Hugging Face tokenizer files,
// profiles, fixtures, dumps and every --json / report output.
//
// Reading: parse_json gives a JsonValue, a read-only view into the parsed document (it keeps the
// document alive) whose typed accessors throw ckjit::Error naming the member ("profile.entries[2].m
// should be an integer"), so a hostile or stale file gets a message, not an exception from deep
// inside the library. Nesting deeper than 64 and duplicate member names are refused.
// Writing: build an OrderedJson (members stay in the order written) and dump_json it.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace ckjit {

using OrderedJson = nlohmann::ordered_json;

// One line (indent < 0) or indented; bytes that are not UTF-8 are replaced (U+FFFD), never thrown on.
std::string dump_json(const OrderedJson& j, int indent = -1);

class JsonValue {
 public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  class Container;
  class Array;
  class Object;

  JsonValue();  // null
  Kind kind() const;
  bool is_null() const { return node_->is_null(); }
  bool is_string() const { return node_->is_string(); }
  bool is_array() const { return node_->is_array(); }
  bool is_object() const { return node_->is_object(); }

  // Typed access; each throws ckjit::Error naming `what` when the kind does not match.
  bool as_bool(std::string_view what = "value") const;
  double as_number(std::string_view what = "value") const;
  int64_t as_int(std::string_view what = "value") const;  // must be an integral number
  const std::string& as_string(std::string_view what = "value") const;
  Array as_array(std::string_view what = "value") const;
  Object as_object(std::string_view what = "value") const;

  // Object member, or nothing (also nothing if this is not an object).
  std::optional<JsonValue> find(std::string_view key) const;
  // Object member; throws ckjit::Error if missing (naming `what`, e.g. "profile.entries[2]").
  JsonValue at(std::string_view key) const;
  JsonValue at(std::string_view key, std::string_view what) const;

  const nlohmann::json& json() const { return *node_; }

 private:
  friend JsonValue parse_json(std::string_view text);
  JsonValue(std::shared_ptr<const nlohmann::json> doc, const nlohmann::json* node) : doc_(std::move(doc)), node_(node) {}
  std::shared_ptr<const nlohmann::json> doc_;
  const nlohmann::json* node_;
};

// What Array and Object share: the document they point into, kept alive, and the node.
class JsonValue::Container {
 public:
  size_t size() const { return node_->size(); }
  bool empty() const { return node_->empty(); }

 protected:
  friend class JsonValue;
  Container(std::shared_ptr<const nlohmann::json> doc, const nlohmann::json* node) : doc_(std::move(doc)), node_(node) {}
  std::shared_ptr<const nlohmann::json> doc_;
  const nlohmann::json* node_;
};

// The elements of an array, as JsonValues (indexable, iterable).
class JsonValue::Array : public Container {
 public:
  JsonValue operator[](size_t i) const { return JsonValue(doc_, &(*node_)[i]); }
  JsonValue at(size_t i) const;  // ckjit::Error past the end
  class iterator {
   public:
    iterator(const Array* a, size_t i) : a_(a), i_(i) {}
    JsonValue operator*() const { return (*a_)[i_]; }
    iterator& operator++() { ++i_; return *this; }
    bool operator!=(const iterator& o) const { return i_ != o.i_; }
   private:
    const Array* a_;
    size_t i_;
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

 private:
  friend class JsonValue;
  using Container::Container;
};

// The members of an object, as (name, JsonValue) pairs in name order.
class JsonValue::Object : public Container {
 public:
  class iterator {
   public:
    iterator(const Object* o, nlohmann::json::const_iterator it) : o_(o), it_(it) {}
    std::pair<const std::string&, JsonValue> operator*() const { return {it_.key(), JsonValue(o_->doc_, &it_.value())}; }
    iterator& operator++() { ++it_; return *this; }
    bool operator!=(const iterator& o) const { return it_ != o.it_; }
   private:
    const Object* o_;
    nlohmann::json::const_iterator it_;
  };
  iterator begin() const { return {this, node_->cbegin()}; }
  iterator end() const { return {this, node_->cend()}; }

 private:
  friend class JsonValue;
  using Container::Container;
};

// ckjit::Error "JSON: <why> at byte N" on malformed input.
JsonValue parse_json(std::string_view text);
JsonValue parse_json_file(const std::string& path);

}  // namespace ckjit
