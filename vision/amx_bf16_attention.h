#pragma once
// The vision tower's full attention in bf16 on AMX tiles (--vision-precision bf16 where AMX-BF16
// is granted). Per head: keys and values rounded to BF16 and packed as B tiles
// (jit/amx_bf16_layout.h: the keys as a [keys x head_dim] matrix, the values as [head_dim x keys]);
// per tile of 32 queries (rounded to BF16): S = Q K^T over all keys (AMX op=dense, K = head_dim
// padded to 32), an exact softmax per row over the whole row (jit/tile_softmax.h's exp and sum,
// one step from an empty state), P rounded to BF16, O = P V (AMX op=dense, K = all keys), out = O / l.
// Float order: the AMX kernels' own (jit/x86/amx_bf16_emitter.cpp), the softmax's fixed one. Every
// output row depends only on its query and the head's keys and values: the same bits for any thread
// count on one CPU; not across CPUs. Tolerance: tests/unit/test_vision_bf16.cpp.
#include <cstdint>

#include "jit/amx_bf16_layout.h"
#include "jit/code_cache.h"
#include "runtime/aligned_allocator.h"
#include "topology/isa.h"
#include "vision/vision_ops.h"

namespace ckjit::vision {

class AmxBf16Attention final : public AttentionOp {
 public:
  // Whether the AMX-BF16 kernels run on isa.
  static bool runs(const topo::Isa& isa);
  // n patches, n_head heads of head_dim; Error when !runs(isa).
  AmxBf16Attention(int64_t n, int64_t n_head, int64_t head_dim, int threads, const topo::Isa& isa);
  void run(Workers& pool, const float* qkv, int64_t ld, float* out, int64_t ldo) const override;
  // One head's tile of up to 32 queries (q0..q0+rows) into out rows; for tests of its pieces.
  void attend_tile(const float* qkv, int64_t ld, int64_t h, int64_t q0, int64_t rows, float* out, int64_t ldo, int worker) const;

 private:
  void pack_head(const float* qkv, int64_t ld, int64_t h) const;
  int64_t n_, n_head_, dh_, dk_, n_pad_;  // dk_: head_dim padded to 32; n_pad_: keys padded to 32
  jit::AmxBf16Layout k_lay_, v_lay_;      // keys [n_pad x dk], values [dk x n_pad]
  const jit::JitKernel *qk_ = nullptr, *pv_ = nullptr;
  float scale_;
  mutable AlignedVector<uint16_t> kp_, vp_;  // per head, packed
  mutable AlignedVector<float> scratch_;     // per worker: S rows, O rows, l
  mutable AlignedVector<uint16_t> bf_scratch_;  // per worker: Q rows, P rows (bf16)
  int64_t floats_per_worker_ = 0, halves_per_worker_ = 0;
};

}  // namespace ckjit::vision
