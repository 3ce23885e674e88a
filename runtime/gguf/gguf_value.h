#pragma once
// GGUF metadata values as the reader hands them out: scalars by value, strings and arrays as views
// into the file's bytes (the mapping outlives every Value a GgufFile returns).
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace ckjit::gguf {

// Metadata value type ids (part of the file format).
enum class ValueType : int32_t {
  U8 = 0, I8 = 1, U16 = 2, I16 = 3, U32 = 4, I32 = 5, F32 = 6, BOOL = 7,
  STRING = 8, ARRAY = 9, U64 = 10, I64 = 11, F64 = 12,
};
constexpr int32_t kValueTypeCount = 13;

const char* value_type_name(ValueType t);  // "u32", "string", "array", ...
// Bytes of one element of a fixed-size type; 0 for STRING and ARRAY.
size_t value_type_size(ValueType t);

// Maps a C++ type to the GGUF value type it is stored as (exact: u32 is never read as i32).
template <class T> struct ValueTypeOf;
template <> struct ValueTypeOf<uint8_t> { static constexpr ValueType value = ValueType::U8; };
template <> struct ValueTypeOf<int8_t> { static constexpr ValueType value = ValueType::I8; };
template <> struct ValueTypeOf<uint16_t> { static constexpr ValueType value = ValueType::U16; };
template <> struct ValueTypeOf<int16_t> { static constexpr ValueType value = ValueType::I16; };
template <> struct ValueTypeOf<uint32_t> { static constexpr ValueType value = ValueType::U32; };
template <> struct ValueTypeOf<int32_t> { static constexpr ValueType value = ValueType::I32; };
template <> struct ValueTypeOf<float> { static constexpr ValueType value = ValueType::F32; };
template <> struct ValueTypeOf<bool> { static constexpr ValueType value = ValueType::BOOL; };
template <> struct ValueTypeOf<uint64_t> { static constexpr ValueType value = ValueType::U64; };
template <> struct ValueTypeOf<int64_t> { static constexpr ValueType value = ValueType::I64; };
template <> struct ValueTypeOf<double> { static constexpr ValueType value = ValueType::F64; };
template <> struct ValueTypeOf<std::string_view> { static constexpr ValueType value = ValueType::STRING; };
template <> struct ValueTypeOf<std::string> { static constexpr ValueType value = ValueType::STRING; };

// An array value: `count` elements of `elem`. Fixed-size elements are packed little-endian at `data`
// (unaligned: read them with at<T>()); string elements are views in `strings`.
struct ArrayView {
  ValueType elem = ValueType::U8;
  uint64_t count = 0;
  const uint8_t* data = nullptr;                         // fixed-size elements
  const std::vector<std::string_view>* strings = nullptr;  // string elements

  template <class T> T at(uint64_t i) const {
    static_assert(!std::is_same_v<T, bool>, "use bool_at");
    T v;
    std::memcpy(&v, data + i * sizeof(T), sizeof(T));
    return v;
  }
  bool bool_at(uint64_t i) const { return data[i] != 0; }
};

// One metadata value. Scalars are held as their raw bit pattern widened to 8 bytes.
class Value {
 public:
  ValueType type() const { return type_; }

  // Scalar of exactly type T (caller checked type() == ValueTypeOf<T>).
  template <class T> T scalar() const {
    if constexpr (std::is_same_v<T, bool>) {
      return raw_[0] != 0;
    } else {
      T v;
      std::memcpy(&v, raw_, sizeof(T));
      return v;
    }
  }
  std::string_view string() const { return str_; }
  const ArrayView& array() const { return arr_; }

  static Value make_scalar(ValueType t, const uint8_t* bytes, size_t n) {
    Value v;
    v.type_ = t;
    std::memcpy(v.raw_, bytes, n);
    return v;
  }
  static Value make_string(std::string_view s) {
    Value v;
    v.type_ = ValueType::STRING;
    v.str_ = s;
    return v;
  }
  static Value make_array(const ArrayView& a) {
    Value v;
    v.type_ = ValueType::ARRAY;
    v.arr_ = a;
    return v;
  }

 private:
  ValueType type_ = ValueType::U8;
  uint8_t raw_[8] = {};
  std::string_view str_;
  ArrayView arr_;
};

// "u32", or "array[string]" for arrays.
std::string describe_type(const Value& v);
// Human-readable value; arrays longer than max_items are abbreviated:
// [151936 strings: "!", "\"", ... ]. Strings are quoted and escaped.
std::string to_display_string(const Value& v, size_t max_items = 8);
// A string made safe for messages and terminals: quotes, escapes control and non-ASCII bytes,
// cut after max_bytes.
std::string quoted(std::string_view s, size_t max_bytes = 200);
// The same escaping without the quotes (for keys and names in tables).
std::string printable(std::string_view s, size_t max_bytes = 200);

}  // namespace ckjit::gguf
