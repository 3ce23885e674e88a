// Whether a structured-output DFA accepts a whole text (shared by the schema and grammar tests).
#pragma once
#include <string>

#include "runtime/structured/byte_automaton.h"

inline bool dfa_accepts(const ckjit::structured::Dfa& d, const std::string& text) {
  const int32_t s = d.walk(0, text);
  return s != ckjit::structured::Dfa::kDead && d.accepting(s);
}
