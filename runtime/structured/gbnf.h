#pragma once
// llama.cpp's GBNF grammars (grammars/README.md of llama.cpp) for structured output, compiled to the
// same byte DFA as JSON Schemas: rules `name ::= ...` with alternatives `|`, sequences, "literals"
// (escapes \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH), [character classes] over code points (ranges,
// ^ negation, the same escapes), `.` (any character), rule references, ( groups ), the repetitions
// * + ? {m} {m,} {m,n}, and # comments. Generation starts at `root`.
//
// The grammar must be regular: a rule that refers back to itself (directly or through others) is an
// Error naming it, as is anything this parser does not read (with its line and column). Recursive
// grammars need a pushdown automaton; JSON of bounded depth is better written as a JSON Schema.
#include <string_view>

#include "runtime/structured/byte_automaton.h"

namespace ckjit::structured {

// Error (invalid_argument) for a grammar that does not parse, has no root, names an undefined rule,
// recurses, or is too large.
Dfa compile_gbnf(std::string_view grammar);

}  // namespace ckjit::structured
