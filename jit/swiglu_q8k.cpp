// SwiGLU tile -> Q8_K blocks through a row-chunked f32 scratch (see kernels.h).
#include <algorithm>
#include <vector>

#include "jit/kernels.h"
#include "runtime/error.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {

void run_swiglu_to_q8k_tile(const JitKernel& swiglu, const JitKernel& q, const MatmulOperands& op, void* dst,
                            int64_t ldd, const Tile& t) {
  const KernelSpec& qs = q.spec();
  if (swiglu.spec().op != Op::SwiGLU || qs.op != Op::Quantize || qs.atype != TensorType::Q8_K || qs.k != quant::QK_K)
    throw Error("run_swiglu_to_q8k_tile: needs a SwiGLU kernel and a k=256 Q8_K quantizer");
  if (!op.w || op.w->n % quant::QK_K != 0 || t.n_begin % quant::QK_K != 0 ||
      (t.n_end % quant::QK_K != 0 && t.n_end != op.w->n))
    throw Error("run_swiglu_to_q8k_tile: columns must be whole 256-blocks");
  swiglu.require_runnable();
  q.require_runnable();
  const int64_t width = t.n_end - t.n_begin;
  if (width <= 0 || t.m_end <= t.m_begin) return;
  const int64_t chunk = std::max<int64_t>(1, (256 << 10) / (width * 4));  // rows per ~256 KiB of scratch
  thread_local std::vector<float> scratch;
  scratch.resize(size_t(std::min(chunk, t.m_end - t.m_begin) * width));
  for (int64_t m0 = t.m_begin; m0 < t.m_end; m0 += chunk) {
    const int64_t m1 = std::min(t.m_end, m0 + chunk);
    MatmulOperands o = op;
    o.y = scratch.data();
    GemmArgs a = tile_args(swiglu.spec(), o, {m0, m1, t.n_begin, t.n_end});
    a.y = scratch.data();  // the tile's (m0, n_begin) lands at scratch[0]
    a.ldy = width * 4;
    swiglu.as<GemmFn>()(&a);
    for (int64_t b = 0; b < width / quant::QK_K; ++b) {
      QuantizeArgs qa;
      qa.x = scratch.data() + b * quant::QK_K;
      qa.y = static_cast<uint8_t*>(dst) + m0 * ldd + (t.n_begin / quant::QK_K + b) * int64_t(sizeof(quant::BlockQ8_K));
      qa.rows = m1 - m0;
      qa.ldx = width * 4;
      qa.ldy = ldd;
      q.as<QuantizeFn>()(&qa);
    }
  }
}

}  // namespace ckjit::jit
