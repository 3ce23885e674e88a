// The x86 generator (Xbyak): chooses the emitter for a spec. Emitters only emit; they never look
// at the CPU.
#include <iterator>

#include "jit/x86/emitter.h"
#include "jit/weight_types.h"
#include "runtime/error.h"

namespace ckjit::jit {

std::unique_ptr<Emitter> make_q4k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q4k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q4k_amx_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q5k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q5k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q5k_amx_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q6k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q6k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q6k_amx_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q80_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q80_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_q80_amx_emitter(const KernelSpec& spec);

std::unique_ptr<Emitter> make_quantize_q8k_avx512_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_quantize_q8k_avx2_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_quantize_q80_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_dense_emitter(const KernelSpec& spec);
std::unique_ptr<Emitter> make_amx_bf16_emitter(const KernelSpec& spec);

namespace {

using EmitterMaker = std::unique_ptr<Emitter> (*)(const KernelSpec& spec);

// The emitters of GEMM, GEMV and SwiGLU per weight type (the x86 columns of jit/weight_kernels.h's
// rows): AVX-VNNI runs the ymm emitter (vpdpbusd on spec.isa).
struct WeightEmitters {
  TensorType wtype;
  EmitterMaker ymm, zmm, amx;
  EmitterMaker of(IsaPath isa) const { return isa == IsaPath::Amx ? amx : is_ymm_path(isa) ? ymm : zmm; }
};

constexpr WeightEmitters kEmitters[] = {
    {TensorType::Q4_K, make_q4k_avx2_emitter, make_q4k_avx512_emitter, make_q4k_amx_emitter},
    {TensorType::Q5_K, make_q5k_avx2_emitter, make_q5k_avx512_emitter, make_q5k_amx_emitter},
    {TensorType::Q6_K, make_q6k_avx2_emitter, make_q6k_avx512_emitter, make_q6k_amx_emitter},
    {TensorType::Q8_0, make_q80_avx2_emitter, make_q80_avx512_emitter, make_q80_amx_emitter},
};

constexpr bool rows_follow_the_type_list() {
  if (std::size(kEmitters) != std::size(kJitWeightTypes)) return false;
  for (size_t i = 0; i < std::size(kEmitters); ++i)
    if (kEmitters[i].wtype != kJitWeightTypes[i]) return false;
  return true;
}
static_assert(rows_follow_the_type_list(), "one row per entry of kJitWeightTypes, in its order");

const WeightEmitters* weight_emitters(TensorType w) {
  for (const WeightEmitters& row : kEmitters)
    if (row.wtype == w) return &row;
  return nullptr;
}

}  // namespace

std::unique_ptr<GeneratedCode> emit_kernel(const KernelSpec& spec) {
  spec.validate();
  if (spec.op == Op::Dense) return spec.isa == IsaPath::Amx ? make_amx_bf16_emitter(spec) : make_dense_emitter(spec);
  if (spec.op == Op::Quantize) {
    // One Q8_0 quantizer for every non-AMX path; AVX-VNNI uses the AVX2 Q8_K one (it needs no VNNI).
    if (spec.atype == TensorType::Q8_0 && spec.isa != IsaPath::Amx) return make_quantize_q80_emitter(spec);
    if (spec.atype == TensorType::Q8_K && spec.isa == IsaPath::Avx512) return make_quantize_q8k_avx512_emitter(spec);
    if (spec.atype == TensorType::Q8_K && is_ymm_path(spec.isa)) return make_quantize_q8k_avx2_emitter(spec);
  } else if (const WeightEmitters* w = weight_emitters(spec.wtype)) {
    return w->of(spec.isa)(spec);  // GEMM, GEMV and SwiGLU
  }
  throw Error("no emitter for kernel spec " + spec.to_string());
}

}  // namespace ckjit::jit
