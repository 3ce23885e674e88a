// Scalar twin of the op=dense kernel (jit/x86/dense_emitter.cpp, both widths): one FMA chain per output over
// k in increasing order, then + bias, then + residual.
#include <cmath>
#include <cstring>

#include "jit/amx_bf16_layout.h"
#include "jit/reference.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {

// The AMX-BF16 block kernel's twin: the same products (bf16 x bf16, exact in f32) summed by one
// FMA chain over K; tdpbf16ps sums them its own way, so the two agree within bf16 rounding only.
static void reference_amx_bf16(const KernelSpec& spec, const GemmArgs* a) {
  const AmxBf16Layout lay{AmxBf16Layout::kPairCols, spec.k};  // one pair; pairs are a->ldr bytes apart
  for (int64_t i = 0; i < a->m; ++i) {
    const uint16_t* x = reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(a->x) + i * a->ldx);
    float* y = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a->y) + i * a->ldy);
    for (int64_t c = 0; c < a->n; ++c) {
      const uint8_t* pair = a->w + (c / AmxBf16Layout::kPairCols) * a->ldr;
      float acc = 0.0f;
      for (int64_t k = 0; k < spec.k; ++k) {
        uint16_t h;
        std::memcpy(&h, pair + lay.offset(c % AmxBf16Layout::kPairCols, k), 2);
        acc = std::fma(quant::bf16_to_f32(x[k]), quant::bf16_to_f32(h), acc);
      }
      y[c] = acc;
    }
  }
}

void reference_dense(const KernelSpec& spec, const GemmArgs* a) {
  if (spec.isa == IsaPath::Amx) return reference_amx_bf16(spec, a);
  const int es = spec.wtype == TensorType::F32 ? 4 : 2;
  const int P = panel_cols(spec.isa);
  const int64_t pstride = spec.k * P * es;
  auto weight = [&](int col, int64_t k) -> float {
    const uint8_t* p = a->w + (col / P) * pstride + k * P * es + (col % P) * es;
    uint16_t h;
    float f;
    switch (spec.wtype) {
      case TensorType::F16: std::memcpy(&h, p, 2); return quant::f16_to_f32(h);
      case TensorType::BF16: std::memcpy(&h, p, 2); return quant::bf16_to_f32(h);
      default: std::memcpy(&f, p, 4); return f;
    }
  };
  const float* bias = reinterpret_cast<const float*>(a->w2);
  for (int i = 0; i < spec.mr; ++i) {
    const float* x = reinterpret_cast<const float*>(static_cast<const uint8_t*>(a->x) + i * a->ldx);
    float* y = reinterpret_cast<float*>(reinterpret_cast<uint8_t*>(a->y) + i * a->ldy);
    const float* r = spec.epilogue == Epilogue::BiasResidual
                         ? reinterpret_cast<const float*>(reinterpret_cast<const uint8_t*>(a->r) + i * a->ldr)
                         : nullptr;
    for (int c = 0; c < spec.nr * P; ++c) {
      float acc = spec.accumulate ? y[c] : 0.0f;
      for (int64_t k = 0; k < spec.kc; ++k) acc = std::fma(x[k], weight(c, k), acc);
      if (spec.epilogue != Epilogue::Store) acc += bias[c];
      if (r) acc += r[c];
      y[c] = acc;
    }
  }
}

}  // namespace ckjit::jit
