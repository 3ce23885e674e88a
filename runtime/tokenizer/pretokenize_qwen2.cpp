#include "runtime/tokenizer/pretokenize_qwen2.h"

#include "runtime/tokenizer/unicode.h"

namespace ckjit::tok {
namespace {

constexpr uint32_t kNone = 0xFFFFFFFF;  // "past the end of the segment"

uint32_t ascii_lower(uint32_t c) { return (c >= 'A' && c <= 'Z') ? c + 32 : c; }
bool is_cr_lf(uint32_t c) { return c == '\r' || c == '\n'; }

}  // namespace

void split_qwen2(std::span<const uint32_t> cps, std::vector<size_t>& piece_lengths) {
  const size_t n = cps.size();
  auto cp_at = [&](size_t i) { return i < n ? cps[i] : kNone; };
  auto flags_at = [&](size_t i) { return i < n ? codepoint_flags(cps[i]) : CodepointFlags{}; };
  auto not_ws_letter_number = [](CodepointFlags f) { return !(f.whitespace() || f.letter() || f.number()); };

  size_t piece_start = 0;
  auto emit_until = [&](size_t end) {
    if (end > piece_start) piece_lengths.push_back(end - piece_start);
    piece_start = end;
  };

  size_t pos = 0;
  while (pos < n) {
    const uint32_t c = cps[pos];
    const CodepointFlags f = codepoint_flags(c);

    // 1. contractions: 's 't 'm 'd 're 've 'll, case-insensitive (ASCII lowering suffices: no other
    //    code point lower-cases to these letters, checked by the table generator)
    if (c == '\'' && pos + 1 < n) {
      const uint32_t c1 = ascii_lower(cps[pos + 1]);
      if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') {
        emit_until(pos += 2);
        continue;
      }
      if (pos + 2 < n) {
        const uint32_t c2 = ascii_lower(cps[pos + 2]);
        if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) {
          emit_until(pos += 3);
          continue;
        }
      }
    }

    // 2. [^\r\n\p{L}\p{N}]?\p{L}+
    if (!(is_cr_lf(c) || f.number()) && (f.letter() || flags_at(pos + 1).letter())) {
      ++pos;
      while (flags_at(pos).letter()) ++pos;
      emit_until(pos);
      continue;
    }

    // 3. \p{N}: one code point
    if (f.number()) {
      emit_until(++pos);
      continue;
    }

    // 4. ' '?[^\s\p{L}\p{N}]+[\r\n]*
    CodepointFlags g = (c == ' ') ? flags_at(pos + 1) : f;
    if (not_ws_letter_number(g) && f.any()) {
      if (c == ' ') ++pos;
      while (not_ws_letter_number(g) && g.any()) g = flags_at(++pos);
      while (is_cr_lf(cp_at(pos))) ++pos;
      emit_until(pos);
      continue;
    }

    // 5.-7. whitespace runs
    size_t n_ws = 0;
    size_t last_cr_lf_end = 0;
    while (flags_at(pos + n_ws).whitespace()) {
      if (is_cr_lf(cps[pos + n_ws])) last_cr_lf_end = pos + n_ws + 1;
      ++n_ws;
    }
    if (last_cr_lf_end > 0) {  // \s*[\r\n]+
      emit_until(pos = last_cr_lf_end);
      continue;
    }
    if (n_ws > 1 && pos + n_ws < n) {  // \s+(?!\S): leave the last space to the next piece
      emit_until(pos += n_ws - 1);
      continue;
    }
    if (n_ws > 0) {  // \s+
      emit_until(pos += n_ws);
      continue;
    }

    emit_until(++pos);  // no alternative matched: the code point alone
  }
}

}  // namespace ckjit::tok
