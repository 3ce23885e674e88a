// Chooses the emitter for a spec. Emitters only emit; they never look at the CPU.
#include "jit/emitter.h"
#include "jit/weight_kernels.h"
#include "runtime/error.h"

namespace ckjit::jit {

std::unique_ptr<Emitter> make_quantize_q8k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_quantize_q8k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_quantize_q80_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_dense_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_amx_bf16_emitter(const KernelSpec& spec);

std::unique_ptr<GeneratedCode> emit_kernel(const KernelSpec& spec) {
  spec.validate();
  if (spec.op == Op::Dense) return spec.isa == IsaPath::Amx ? make_amx_bf16_emitter(spec) : make_dense_emitter(spec);
  if (spec.op == Op::Quantize) {
    // One Q8_0 quantizer for every non-AMX path; AVX-VNNI uses the AVX2 Q8_K one (it needs no VNNI).
    if (spec.atype == TensorType::Q8_0 && spec.isa != IsaPath::Amx) return make_quantize_q80_emitter(spec);
    if (spec.atype == TensorType::Q8_K && spec.isa == IsaPath::Avx512) return make_quantize_q8k_avx512_emitter(spec);
    if (spec.atype == TensorType::Q8_K && is_ymm_path(spec.isa)) return make_quantize_q8k_avx2_emitter(spec);
  } else if (const WeightKernels* w = weight_kernels(spec.wtype)) {
    return w->emitter(spec.isa)(spec);  // GEMM, GEMV and SwiGLU
  }
  throw Error("no emitter for kernel spec " + spec.to_string());
}

}  // namespace ckjit::jit
