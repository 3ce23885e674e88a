#pragma once
// Which copy of a hand-written kernel a load runs. The kernels written by hand rather than
// generated — graph/'s and vision/'s element-wise and f16 ops, vision's DenseLinear repack, and
// the runtime/quants kernels graph's Linear calls — come as x86 copies in files named for their ISA (*_avx2.cpp,
// *_avx512.cpp, *_x86.cpp) and a portable C++ twin with the same float order, so every copy gives
// the same bits. The choice is made here, once per load, from the load's Isa (CKJIT_MAX_ISA and a
// caller's cap already applied: jit::IsaTarget), so no code above jit/ reads an ISA flag. The
// copies themselves live with their op (jit/ may not include the layers above it): each owner
// lists them best first in a HandCopy table, checked against this one at compile time.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/error.h"
#include "topology/isa.h"

namespace ckjit::jit {

// The ops with hand-written copies (hand_kernels.cpp: what each copy needs).
enum class HandOp : uint8_t {
  f16_rows,        // f32 -> f16 rows, rounding through f16, the GELU table's gathers (graph/, vision/)
  attention_rows,  // llama.cpp's flash-attention rows (graph/layer_ops)
  swiglu,          // llama.cpp's swiglu (graph/layer_ops)
  q8k_quantize,    // runtime's Q8_K activation quantizer, FMA-contracted (graph/linear)
  decode_dots,     // runtime's llama.cpp-order Q6_K / Q8_0 dots of decode rows (graph/linear)
  rope_rows,       // the M-RoPE rotation (graph/rope)
  dense_panels,    // the repack of a vision DenseLinear's weight into panels, a transposition (vision/dense_linear)
};

// The copies, best first. portable runs anywhere.
enum class HandIsa : uint8_t { avx512, avx2, portable };
const char* hand_isa_name(HandIsa isa);

// The copy of `op` for `isa`: the first of the op's copies whose features isa has.
HandIsa hand_isa(HandOp op, const topo::Isa& isa);

// The copies jit/ knows of for `op`, best first: what an owner's HandCopy table must list.
struct HandCopies {
  HandIsa isa[3];
  size_t count;
};
constexpr HandCopies hand_copies(HandOp op) {
  switch (op) {
    case HandOp::f16_rows:
    case HandOp::rope_rows:
    case HandOp::dense_panels: return {{HandIsa::avx2, HandIsa::portable}, 2};
    case HandOp::q8k_quantize:
    case HandOp::decode_dots:
    case HandOp::attention_rows:
    case HandOp::swiglu: return {{HandIsa::avx512, HandIsa::avx2, HandIsa::portable}, 3};
  }
  return {{}, 0};
}

// One copy of an op as its owner holds it: the functions (a pointer or a struct of them).
template <class Fns>
struct HandCopy {
  HandIsa isa;
  Fns fns;
};

// Whether an owner's table lists exactly the copies jit/ chooses among, in its order.
template <class Fns, size_t N>
constexpr bool lists_the_copies(const HandCopy<Fns> (&copies)[N], HandOp op) {
  const HandCopies want = hand_copies(op);
  if (want.count != N) return false;
  for (size_t i = 0; i < N; ++i)
    if (copies[i].isa != want.isa[i]) return false;
  return true;
}

// The entry of `copies` (lists_the_copies) that runs for `isa`.
template <class Fns, size_t N>
const HandCopy<Fns>& pick(const HandCopy<Fns> (&copies)[N], HandOp op, const topo::Isa& isa) {
  const HandIsa want = hand_isa(op, isa);
  for (const HandCopy<Fns>& c : copies)
    if (c.isa == want) return c;
  throw Error(std::string("no ") + hand_isa_name(want) + " copy of a hand-written kernel");  // lists_the_copies rules it out
}

}  // namespace ckjit::jit
