#include "runtime/gguf/gguf_value.h"

#include <cinttypes>
#include <cstdio>

namespace ckjit::gguf {

const char* value_type_name(ValueType t) {
  switch (t) {
    case ValueType::U8: return "u8";
    case ValueType::I8: return "i8";
    case ValueType::U16: return "u16";
    case ValueType::I16: return "i16";
    case ValueType::U32: return "u32";
    case ValueType::I32: return "i32";
    case ValueType::F32: return "f32";
    case ValueType::BOOL: return "bool";
    case ValueType::STRING: return "string";
    case ValueType::ARRAY: return "array";
    case ValueType::U64: return "u64";
    case ValueType::I64: return "i64";
    case ValueType::F64: return "f64";
  }
  return "invalid";
}

size_t value_type_size(ValueType t) {
  switch (t) {
    case ValueType::U8: case ValueType::I8: case ValueType::BOOL: return 1;
    case ValueType::U16: case ValueType::I16: return 2;
    case ValueType::U32: case ValueType::I32: case ValueType::F32: return 4;
    case ValueType::U64: case ValueType::I64: case ValueType::F64: return 8;
    case ValueType::STRING: case ValueType::ARRAY: return 0;
  }
  return 0;
}

std::string describe_type(const Value& v) {
  if (v.type() != ValueType::ARRAY) return value_type_name(v.type());
  return std::string("array[") + value_type_name(v.array().elem) + "]";
}

namespace {

// Length of the valid UTF-8 sequence starting at s[i], or 0 if it is not one.
size_t utf8_sequence_length(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  size_t n = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
  if (c >= 0xF5) n = 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  return n;
}

std::string scalar_text(const Value& v) {
  char buf[64];
  switch (v.type()) {
    case ValueType::U8: std::snprintf(buf, sizeof buf, "%u", unsigned(v.scalar<uint8_t>())); break;
    case ValueType::I8: std::snprintf(buf, sizeof buf, "%d", int(v.scalar<int8_t>())); break;
    case ValueType::U16: std::snprintf(buf, sizeof buf, "%u", unsigned(v.scalar<uint16_t>())); break;
    case ValueType::I16: std::snprintf(buf, sizeof buf, "%d", int(v.scalar<int16_t>())); break;
    case ValueType::U32: std::snprintf(buf, sizeof buf, "%" PRIu32, v.scalar<uint32_t>()); break;
    case ValueType::I32: std::snprintf(buf, sizeof buf, "%" PRId32, v.scalar<int32_t>()); break;
    case ValueType::U64: std::snprintf(buf, sizeof buf, "%" PRIu64, v.scalar<uint64_t>()); break;
    case ValueType::I64: std::snprintf(buf, sizeof buf, "%" PRId64, v.scalar<int64_t>()); break;
    case ValueType::F32: std::snprintf(buf, sizeof buf, "%.9g", double(v.scalar<float>())); break;
    case ValueType::F64: std::snprintf(buf, sizeof buf, "%.17g", v.scalar<double>()); break;
    case ValueType::BOOL: return v.scalar<bool>() ? "true" : "false";
    case ValueType::STRING: return quoted(v.string());
    case ValueType::ARRAY: return "array";
  }
  return buf;
}

// Element i of an array as a standalone Value (for formatting).
Value element(const ArrayView& a, uint64_t i) {
  if (a.elem == ValueType::STRING) return Value::make_string((*a.strings)[i]);
  size_t n = value_type_size(a.elem);
  return Value::make_scalar(a.elem, a.data + i * n, n);
}

}  // namespace

namespace {
// Escaped bytes of s (at most max_bytes of them); `cut` tells whether s was longer.
std::string escape(std::string_view s, size_t max_bytes, bool& cut) {
  std::string out;
  size_t i = 0;
  for (; i < s.size() && i < max_bytes; ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c >= 0x20 && c < 0x7F) {
      out += char(c);
    } else if (size_t n = c >= 0x80 ? utf8_sequence_length(s, i) : 0) {
      out.append(s.substr(i, n));  // keep valid UTF-8 readable (tokens like "Ġthe")
      i += n - 1;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  cut = i < s.size();
  return out;
}
}  // namespace

std::string quoted(std::string_view s, size_t max_bytes) {
  bool cut = false;
  std::string out = "\"" + escape(s, max_bytes, cut) + "\"";
  if (cut) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string printable(std::string_view s, size_t max_bytes) {
  bool cut = false;
  std::string out = escape(s, max_bytes, cut);
  if (cut) out += "...(" + std::to_string(s.size()) + " bytes)";
  return out;
}

std::string to_display_string(const Value& v, size_t max_items) {
  if (v.type() != ValueType::ARRAY) return scalar_text(v);
  const ArrayView& a = v.array();
  std::string out = "[";
  bool abbreviated = a.count > max_items;
  if (abbreviated) {
    out += std::to_string(a.count) + " " + value_type_name(a.elem) + (a.elem == ValueType::STRING ? "s: " : ": ");
  }
  uint64_t shown = abbreviated ? max_items : a.count;
  for (uint64_t i = 0; i < shown; ++i) {
    if (i) out += ", ";
    out += scalar_text(element(a, i));
  }
  out += abbreviated ? ", ... ]" : "]";
  return out;
}

}  // namespace ckjit::gguf
