#pragma once
// JSON Schema (a subset) to a byte DFA over the JSON texts it admits, for structured output.
//
// Supported: type (string, number, integer, boolean, null, object, array, or a list of them),
// properties + required (written in the schema's order; the others optional), additionalProperties
// (a schema: a map when there are no properties; extra keys are never written otherwise), items,
// minItems / maxItems, minLength / maxLength (characters), enum, const, anyOf, $ref to #/$defs or
// #/definitions (not recursive), true / false schemas, and the annotations (title, description,
// default, examples, $schema, $id, $comment, ...). Anything else (pattern, format, minimum, oneOf,
// if/then, recursion, ...) is an Error naming the keyword and where it is: the output would not be
// guaranteed to validate.
//
// The text is JSON with llama.cpp's optional whitespace between tokens (a space, or a newline and up to
// 20 spaces or tabs); numbers
// have at most 16 integer and 16 fraction digits; a value with no schema ({} or true) is any JSON
// value nested at most kAnyDepth deep. Nothing follows the top-level value.
#include <string_view>

#include "runtime/structured/byte_automaton.h"

namespace ckjit::structured {

// 2 in a fuzzing build (byte_automaton.h's limits): the same recursive construction one level less
// deep, so an untyped value's automaton is small enough for a campaign to run many schemas.
constexpr int kAnyDepth = 3 - (kLimitShift > 0 ? 1 : 0);

// Error (invalid_argument) for text that is not JSON or a schema outside the subset.
Dfa compile_json_schema(std::string_view schema_json);
// Any JSON object (OpenAI's response_format json_object).
Dfa any_json_object();

}  // namespace ckjit::structured
