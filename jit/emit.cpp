// Chooses the emitter for a spec. Emitters only emit; they never look at the CPU.
#include "jit/emitter.h"
#include "runtime/error.h"

namespace ckjit::jit {

std::unique_ptr<Emitter> make_q4k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q4k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q6k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_quantize_q8k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q80_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q5k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_amx_matmul_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_quantize_q8k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q6k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q5k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q80_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_quantize_q80_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_dense_avx2_emitter(const KernelSpec& spec);

std::unique_ptr<Emitter> emit_kernel(const KernelSpec& spec) {
  spec.validate();
  if (spec.op == Op::Dense) return make_dense_avx2_emitter(spec);  // validate() admits isa=avx2 only
  // The AVX-VNNI path shares the AVX2 emitters (they switch to vpdpbusd on spec.isa); its
  // quantizers are the AVX2 ones, which need no VNNI.
  if (spec.isa == IsaPath::AvxVnni) {
    if (spec.op == Op::Quantize)
      return spec.atype == TensorType::Q8_0 ? make_quantize_q80_emitter(spec) : make_quantize_q8k_avx2_emitter(spec);
    switch (spec.wtype) {
      case TensorType::Q4_K: return make_q4k_avx2_emitter(spec);
      case TensorType::Q5_K: return make_q5k_avx2_emitter(spec);
      case TensorType::Q6_K: return make_q6k_avx2_emitter(spec);
      case TensorType::Q8_0: return make_q80_avx2_emitter(spec);
      default: break;
    }
  }
  const bool matmul = spec.op == Op::Gemm || spec.op == Op::Gemv || spec.op == Op::SwiGLU;
  if (matmul && spec.wtype == TensorType::Q4_K && spec.isa == IsaPath::Avx512) return make_q4k_avx512_emitter(spec);
  if (matmul && spec.wtype == TensorType::Q4_K && spec.isa == IsaPath::Avx2) return make_q4k_avx2_emitter(spec);
  if (matmul && spec.wtype == TensorType::Q6_K && spec.isa == IsaPath::Avx512) return make_q6k_avx512_emitter(spec);
  if (matmul && spec.isa == IsaPath::Amx) return make_amx_matmul_emitter(spec);
  if (matmul && spec.wtype == TensorType::Q6_K && spec.isa == IsaPath::Avx2) return make_q6k_avx2_emitter(spec);
  if (matmul && spec.wtype == TensorType::Q5_K && spec.isa == IsaPath::Avx2) return make_q5k_avx2_emitter(spec);
  if (matmul && spec.wtype == TensorType::Q5_K && spec.isa == IsaPath::Avx512) return make_q5k_avx512_emitter(spec);
  if (matmul && spec.wtype == TensorType::Q8_0 && spec.isa == IsaPath::Avx512) return make_q80_avx512_emitter(spec);
  if (matmul && spec.wtype == TensorType::Q8_0 && spec.isa == IsaPath::Avx2) return make_q80_avx2_emitter(spec);
  if (spec.op == Op::Quantize && spec.atype == TensorType::Q8_0 && spec.isa != IsaPath::Amx)
    return make_quantize_q80_emitter(spec);
  if (spec.op == Op::Quantize && spec.atype == TensorType::Q8_K && spec.isa == IsaPath::Avx512)
    return make_quantize_q8k_avx512_emitter(spec);
  if (spec.op == Op::Quantize && spec.atype == TensorType::Q8_K && spec.isa == IsaPath::Avx2)
    return make_quantize_q8k_avx2_emitter(spec);
  throw Error("no emitter for kernel spec " + spec.to_string());
}

}  // namespace ckjit::jit
