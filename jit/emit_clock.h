#pragma once
// How long this process has spent emitting JIT kernels (every CodeCache, all threads): the "JIT"
// share of load that ckjit run --report separates from the weight repacks.
#include <cstdint>

namespace ckjit::jit {

struct EmitClock {
  double ms = 0;        // emitting wall time (emits are serialized by the cache)
  int64_t kernels = 0;  // kernels emitted
};
EmitClock emit_clock();

}  // namespace ckjit::jit
