// Scalar twin of the op=dense kernel (jit/dense_emitter.cpp, both widths): one FMA chain per output over
// k in increasing order, then + bias, then + residual.
#include <cmath>
#include <cstring>

#include "jit/reference.h"
#include "runtime/quants/quants.h"

namespace ckjit::jit {

void reference_dense(const KernelSpec& spec, const GemmArgs* a) {
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
