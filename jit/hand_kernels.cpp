#include "jit/hand_kernels.h"

#include <iterator>

#include "jit/isa_select.h"

namespace ckjit::jit {
namespace {

// What each x86 copy uses (its functions' target attributes); the portable twins need nothing.
bool avx2_fma_f16c(const topo::Isa& i) { return i.avx2 && i.fma && i.f16c; }
bool avx512f_floor(const topo::Isa& i) { return avx2_fma_f16c(i) && i.avx512f; }
bool avx512f_dq(const topo::Isa& i) { return avx512f_floor(i) && i.avx512dq; }
bool avx512f_bw(const topo::Isa& i) { return avx2_fma_f16c(i) && i.avx512f && i.avx512bw; }  // its table also calls the avx2 dots
bool avx2_fma(const topo::Isa& i) { return i.avx2 && i.fma; }
bool avx2_only(const topo::Isa& i) { return i.avx2; }  // only moves bytes: no FMA, no F16C
// Decode's two-rows-per-zmm Q6_K dots: AVX512F + BW + DQ + VL, F16C, and VNNI (vpdpwssd over
// several rows); the avx512 kernel path asks all of them but DQ and F16C.
bool avx512_dots(const topo::Isa& i) { return isa_runs(IsaPath::Avx512, i) && i.avx512dq && i.f16c; }

struct Row {
  HandOp op;
  HandIsa copy;
  bool (*accepts)(const topo::Isa&);
};
// Per op its x86 copies, best first; an op none of whose rows accepts the Isa runs its portable twin.
constexpr Row kRows[] = {
    {HandOp::f16_rows, HandIsa::avx2, avx2_fma_f16c},
    {HandOp::attention_rows, HandIsa::avx512, avx512f_floor},
    {HandOp::attention_rows, HandIsa::avx2, avx2_fma_f16c},
    {HandOp::swiglu, HandIsa::avx512, avx512f_dq},
    {HandOp::swiglu, HandIsa::avx2, avx2_fma_f16c},
    {HandOp::q8k_quantize, HandIsa::avx512, avx512f_bw},
    {HandOp::q8k_quantize, HandIsa::avx2, avx2_fma},
    {HandOp::decode_dots, HandIsa::avx512, avx512_dots},
    {HandOp::decode_dots, HandIsa::avx2, avx2_fma_f16c},
    {HandOp::rope_rows, HandIsa::avx2, avx2_fma},
    {HandOp::dense_panels, HandIsa::avx2, avx2_only},
};

// Each row names a copy hand_copies lists for its op, the op's rows in that order: what the
// owners' tables are checked against is what is chosen from.
constexpr bool rows_follow_the_copies() {
  for (size_t i = 0; i < std::size(kRows); ++i) {
    const HandCopies c = hand_copies(kRows[i].op);
    size_t at = c.count;
    for (size_t j = 0; j < c.count; ++j)
      if (c.isa[j] == kRows[i].copy) at = j;
    if (at == c.count || kRows[i].copy == HandIsa::portable) return false;
    if (i > 0 && kRows[i - 1].op == kRows[i].op && kRows[i - 1].copy >= kRows[i].copy) return false;
  }
  return true;
}
static_assert(rows_follow_the_copies(), "every row is an x86 copy its op lists, best first");

}  // namespace

const char* hand_isa_name(HandIsa isa) {
  switch (isa) {
    case HandIsa::avx512: return "avx512";
    case HandIsa::avx2: return "avx2";
    case HandIsa::portable: return "portable";
  }
  return "?";
}

HandIsa hand_isa(HandOp op, const topo::Isa& isa) {
  for (const Row& r : kRows)
    if (r.op == op && r.accepts(isa)) return r.copy;
  return HandIsa::portable;
}

}  // namespace ckjit::jit
